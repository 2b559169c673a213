"""Erasure by audit id reaches the notes consolidation derived from the erased notes.

A consolidated note has no single audit id when its sources had several; it still holds what
each source said (its text, or a loser's text in ``conflicts``), so it goes with any of them,
and so does every note consolidated from it later. The other sources stay: what was said
under another audit id is not this erasure's to remove.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest

from memkg import Engine, FrozenClock, MemoryLLM, NotFound, Scope
from support.scripted_model import ScriptedModel

USER, DOMAIN = "u1", "health"


def _note(engine: Engine, clock: FrozenClock, text: str, audit: str, session: str) -> str:
    result = engine.save_memory_note(
        USER, DOMAIN, text, "session", session_id=session,
        provenance={"audit_log_id": audit, "consent_granted": True},
    )  # fmt: skip
    assert result.saved, result.reason
    clock.advance(timedelta(minutes=5))
    return result.id or ""


def _lasting(engine: Engine) -> list[str]:
    return [n.text for n in engine.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]


def _ids_in_log(engine: Engine) -> set[str]:
    return {e.fact_id for e in engine.read_events(USER) if e.fact_id is not None}


def test_a_note_merged_from_notes_of_two_audit_ids_goes_with_either(
    eng: Engine, clock: FrozenClock
) -> None:
    a = _note(eng, clock, "Prefers female doctors", "audit-A", "s1")
    b = _note(eng, clock, "prefers female doctors!", "audit-B", "s1")
    [memory] = eng.consolidate(USER, DOMAIN, "s1").result(timeout=10).memories
    [merged] = [n for n in eng.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]
    assert merged.provenance.audit_log_id is None and memory.from_notes == [a, b]

    [receipt] = eng.erase_audit_id("audit-A")
    assert _lasting(eng) == []
    assert merged.id not in _ids_in_log(eng) and a not in _ids_in_log(eng)
    assert receipt.removed["facts"] == 2  # the note said under audit-A, and the merged one
    assert "female" not in eng.render_profile(USER, DOMAIN, budget=2000).text
    # what was said under audit-B stays, as the session note it was before the merge
    [left] = eng.notes(USER, DOMAIN)
    assert (left.id, left.scope, left.session_id) == (b, Scope.SESSION, "s1")

    eng.erase_audit_id("audit-B")
    assert eng.notes(USER, DOMAIN) == [] and _ids_in_log(eng) == set()


def test_notes_consolidated_from_a_derived_note_go_too(eng: Engine, clock: FrozenClock) -> None:
    _note(eng, clock, "Prefers female doctors", "audit-A", "s1")
    _note(eng, clock, "prefers female doctors.", "audit-B", "s1")
    eng.consolidate(USER, DOMAIN, "s1").result(timeout=10)
    c = _note(eng, clock, "Prefers female doctors", "audit-C", "s2")
    [memory] = eng.consolidate(USER, DOMAIN, "s2").result(timeout=10).memories
    assert len(memory.from_notes) == 2 and c in memory.from_notes  # the first merge, and c
    eng.erase_audit_id("audit-A")
    assert _lasting(eng) == []
    assert sorted(n.session_id or "" for n in eng.notes(USER, DOMAIN)) == ["s1", "s2"]


def test_a_note_holding_an_erased_loser_of_a_conflict_goes(eng: Engine, clock: FrozenClock) -> None:
    """The winner of a contradiction keeps the loser's text (``conflicts``)."""
    _note(eng, clock, "Likes spicy food", "audit-A", "s1")
    newer = _note(eng, clock, "Does not like spicy food", "audit-B", "s1")
    eng.consolidate(USER, DOMAIN, "s1").result(timeout=10)
    [merged] = [n for n in eng.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]
    assert merged.conflicts == ("Likes spicy food",) and merged.merged_from == (newer,)
    eng.erase_audit_id("audit-A")
    assert _lasting(eng) == []
    profile = eng.render_profile(USER, DOMAIN, budget=2000, session_id="s1").text
    assert "Likes spicy food" not in profile
    assert [n.id for n in eng.notes(USER, DOMAIN)] == [newer]


def test_erasing_an_unrelated_audit_id_leaves_the_merged_note(
    eng: Engine, clock: FrozenClock
) -> None:
    _note(eng, clock, "Prefers female doctors", "audit-A", "s1")
    _note(eng, clock, "prefers female doctors!", "audit-B", "s1")
    eng.consolidate(USER, DOMAIN, "s1").result(timeout=10)
    _note(eng, clock, "Likes tea", "audit-Z", "s2")
    eng.erase_audit_id("audit-Z")
    assert _lasting(eng) == ["prefers female doctors!"]


def test_traces_naming_a_derived_note_go(eng: Engine, clock: FrozenClock) -> None:
    _note(eng, clock, "Prefers female doctors", "audit-A", "s1")
    _note(eng, clock, "prefers female doctors!", "audit-B", "s1")
    eng.consolidate(USER, DOMAIN, "s1").result(timeout=10)
    [merged] = [n for n in eng.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]
    profile = eng.render_profile(USER, DOMAIN, budget=2000)
    assert profile.trace_id is not None
    assert merged.id in {item.ref for item in eng.trace(profile.trace_id).items}
    [receipt] = eng.erase_audit_id("audit-A")
    assert receipt.removed["traces"] == 1
    with pytest.raises(NotFound):
        eng.trace(profile.trace_id)


def test_a_note_purged_while_the_model_plans_is_not_merged_back(clock: FrozenClock) -> None:
    """The plan was made from a note erased meanwhile: it is not applied, but made again
    from what is left (a purge leaves the stream's version as it was; its count moved)."""
    planning, release = threading.Event(), threading.Event()
    model = ScriptedModel(topics={"female": "doctor"})

    def slow(body: dict[str, Any]) -> dict[str, Any]:
        if not planning.is_set():
            planning.set()
            assert release.wait(timeout=10)
        return model(body)

    with Engine(clock=clock, llm=MemoryLLM(slow)) as engine:
        _note(engine, clock, "Prefers a female doctor for check-ups", "audit-A", "s1")
        kept = _note(engine, clock, "Wants female doctors", "audit-B", "s1")
        handle = engine.consolidate(USER, DOMAIN, "s1")
        assert planning.wait(timeout=10)
        engine.erase_audit_id("audit-A")
        release.set()
        report = handle.result(timeout=10)
        assert [m.from_notes for m in report.memories] == [[kept]]
        assert _lasting(engine) == ["Wants female doctors"]
        logged = json.dumps([e.payload for e in engine.read_events(USER)])
        assert "check-ups" not in logged
