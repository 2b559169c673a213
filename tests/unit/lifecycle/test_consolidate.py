"""Consolidate: paraphrases merge, contradictions are reported, reruns change nothing."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest

from memkg import Engine, EventType, FrozenClock, MemoryLLM, Scope
from support.scripted_model import ScriptedModel
from support.stream_reads import stream_reads

USER, DOMAIN, SESSION = "u1", "travel", "s1"


def _save(engine: Engine, clock: FrozenClock, *notes: str, scope: str = "session") -> list[str]:
    ids = []
    for text in notes:
        result = engine.save_memory_note(USER, DOMAIN, text, scope, session_id=SESSION)
        assert result.saved, result.reason
        ids.append(result.id or "")
        clock.advance(timedelta(minutes=5))
    return ids


def _lasting(engine: Engine) -> list[str]:
    return [n.text for n in engine.notes(USER, DOMAIN) if n.scope is Scope.GLOBAL]


def test_three_paraphrases_become_one_memory(life: Engine, clock: FrozenClock) -> None:
    ids = _save(
        life,
        clock,
        "Prefers window seats",
        "Likes sitting by the window",
        "Wants a window seat on long flights",
    )
    report = life.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert report.method == "llm" and report.fallback_reason is None
    [memory] = report.memories
    assert memory.from_notes == ids and memory.text == "Wants a window seat on long flights"
    assert _lasting(life) == ["Wants a window seat on long flights"]
    [merged] = [e for e in life.read_events(USER) if e.type is EventType.NOTE_MERGED]
    assert merged.payload["merged"] == ids and merged.payload["consolidation_id"] == (
        report.consolidation_id
    )
    [note] = life.notes(USER)
    assert note.merged_from == tuple(ids) and merged.fact_id == note.id
    assert note.provenance.source_ref == f"consolidation:{report.consolidation_id}"


def test_fallback_merges_normalized_duplicates_and_says_why(
    plain: Engine, clock: FrozenClock
) -> None:
    _save(
        plain, clock, "Prefers window seats.", "prefers  WINDOW seats", "User prefers window seats!"
    )
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert (report.method, report.fallback_reason) == ("fallback", "no LLM configured")
    assert [len(m.from_notes) for m in report.memories] == [3]
    assert _lasting(plain) == ["User prefers window seats!"]


@pytest.mark.parametrize("with_model", [True, False])
def test_a_contradiction_is_reported_not_silently_resolved(
    life: Engine, plain: Engine, clock: FrozenClock, with_model: bool
) -> None:
    engine = life if with_model else plain
    older, newer = _save(engine, clock, "Likes spicy food", "Does not like spicy food")
    report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    [conflict] = report.conflicts
    assert set(conflict.note_ids) == {older, newer} and conflict.kept == newer
    assert _lasting(engine) == ["Does not like spicy food"]
    [note] = [n for n in engine.notes(USER) if n.scope is Scope.GLOBAL]
    assert note.conflicts == ("Likes spicy food",)
    conflicts = engine.render_profile(USER, DOMAIN).text.split("## Open conflicts")[1]
    assert '"Does not like spicy food" replaced the earlier "Likes spicy food"' in conflicts
    [closing] = [e for e in engine.read_events(USER) if e.type is EventType.SESSION_CONSOLIDATED]
    assert closing.payload["conflicts"] == [{"note_ids": conflict.note_ids, "kept": newer}]


def test_running_twice_changes_nothing_the_second_time(life: Engine, clock: FrozenClock) -> None:
    _save(life, clock, "Prefers window seats", "Likes quiet hotels")
    for _ in range(2):  # said twice: a repeated preference, meant to last
        life.save_memory_note(
            USER, DOMAIN, "Prefers aisle seats", key="seat.preference", session_id=SESSION
        )
    first = life.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert first.changed and [f.duplicate for f in first.facts] == [False]
    head, calls = life.store.head(), len(life.llm.requests)  # type: ignore[union-attr]
    second = life.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert not second.changed and second.method == "none"
    assert [f.duplicate for f in second.facts] == [True]
    assert life.store.head() == head and len(life.llm.requests) == calls  # type: ignore[union-attr]


def test_session_facts_are_promoted_through_arbitration(life: Engine) -> None:
    for _ in range(2):  # said twice: a repeated preference, meant to last
        life.save_memory_note(
            USER, DOMAIN, "Prefers aisle seats", key="seat.preference", session_id=SESSION
        )
    report = life.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    [promoted] = report.facts
    fact = life.fact(USER, promoted.fact_id)
    assert fact.scope is Scope.GLOBAL and fact.provenance.source_ref.startswith("fact:")
    resolution = life.resolve(USER, DOMAIN, "seat.preference", session_id="next-session")
    assert resolution.value == "aisle"


def test_endpoint_down_runs_the_fallback_and_says_so(clock: FrozenClock) -> None:
    with Engine(clock=clock, llm=MemoryLLM.down("connection refused")) as engine:
        _save(engine, clock, "Prefers window seats", "prefers window seats")
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert report.method == "fallback" and report.fallback_reason is not None
    assert report.fallback_reason.startswith("llm.unavailable: ")
    assert [len(m.from_notes) for m in report.memories] == [2]


def test_an_unusable_plan_is_not_applied(clock: FrozenClock) -> None:
    def careless(body: dict[str, Any]) -> dict[str, Any]:
        plan = {
            "memories": [
                {"text": "User might like everything", "from_notes": ["note_x"], "reason": "single"}
            ],
            "dropped": [],
            "conflicts": [],
        }
        return {"content": json.dumps(plan)}

    with Engine(clock=clock, llm=MemoryLLM(careless)) as engine:
        _save(engine, clock, "Prefers window seats")
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert report.method == "fallback" and report.fallback_reason is not None
        assert "1 unknown note id(s)" in report.fallback_reason
        assert "note_x" not in report.fallback_reason  # the model's text is never quoted
        assert "not accounted for" in report.fallback_reason
        assert _lasting(engine) == ["Prefers window seats"]


def test_ephemeral_notes_are_dropped(life: Engine, clock: FrozenClock) -> None:
    [turn] = _save(life, clock, "Wants a taxi to the airport", scope="turn")
    [today] = _save(life, clock, "Is tired today")
    report = life.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert sorted(report.dropped) == sorted([(turn, "ephemeral"), (today, "ephemeral")])
    assert life.notes(USER) == []


def test_it_runs_in_the_background(clock: FrozenClock) -> None:
    release, model = threading.Event(), ScriptedModel()

    def slow(body: dict[str, Any]) -> dict[str, Any]:
        assert release.wait(timeout=10)
        return model(body)

    with Engine(clock=clock, llm=MemoryLLM(slow)) as engine:
        _save(engine, clock, "Prefers window seats")
        handle = engine.consolidate(USER, DOMAIN, SESSION)
        assert not handle.done()  # the agent carries on meanwhile
        assert engine.save_memory_note(USER, DOMAIN, "Likes tea", "global").saved
        release.set()
        assert handle.result(timeout=10).method == "llm"


def _seat(engine: Engine, value: str, **provenance: str) -> None:
    engine.ingest({"user_id": USER, "domain": DOMAIN, "key": "seat.preference", "value": value,
                   "source": "dialogue", "provenance": provenance})  # fmt: skip


def test_a_session_end_reads_none_of_the_history(
    tmp_path: Any, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consolidation plans from the notes kept while the user is resident, not from the
    whole stream: a session's end costs the same after 200 restatements as after none, and
    merges what a fold of the whole stream would have."""
    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        for n in range(200):
            _seat(engine, ["window", "aisle"][n % 2])
        _save(engine, clock, "Prefers window seats.", "prefers  WINDOW seats")
        engine.render_profile(USER, DOMAIN)  # a turn's prompt: the notes are read, then kept
        read = stream_reads(engine, monkeypatch)  # events each read hands over
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert sum(read) == 0  # none of the 400 events before
        assert report.method == "fallback" and len(report.memories) == 1
        assert _lasting(engine) == ["prefers  WINDOW seats"]


def test_a_session_ends_after_a_purge_of_the_streams_last_event(
    tmp_path: Any, clock: FrozenClock
) -> None:
    """A purge removes events but leaves the stream's version where it was: the
    consolidation's append expects that version, not the last event's (which conflicted on
    every attempt)."""
    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        _save(engine, clock, "Prefers window seats.", "prefers  WINDOW seats")
        _seat(engine, "aisle", audit_log_id="aud-1")
        engine.erase_audit_id("aud-1")  # the last event gone; the version stays
        assert engine.store.stream_mark(USER)[0] > engine.read_events(USER)[-1].version
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert len(report.memories) == 1 and len(report.events) == 2
        assert _lasting(engine) == ["prefers  WINDOW seats"]


def test_a_user_whose_memory_went_off_and_on_consolidates_from_their_own_stream(
    plain: Engine, clock: FrozenClock
) -> None:
    """A view with a memory switch is not the plain stream: its notes are folded from the
    user's own stream, and the append expects that stream's version."""
    plain.disable_memory(USER)
    plain.enable_memory(USER)
    _save(plain, clock, "Prefers window seats.", "prefers  WINDOW seats")
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert len(report.memories) == 1
    assert _lasting(plain) == ["prefers  WINDOW seats"]


def test_a_merged_user_consolidates_the_notes_of_their_own_stream(
    plain: Engine, clock: FrozenClock
) -> None:
    """Merged ids read each other's notes, but a session's end merges the notes of the id it
    is asked for, from that id's own stream, and appends there."""
    merge = plain.merge_users(USER, "u2", by="support", reason="one person")
    plain.merge_users(USER, "u2", by="support", reason="one person", confirm=merge.merge_id)
    plain.save_memory_note("u2", DOMAIN, "Prefers aisle seats.", "session", session_id=SESSION)
    _save(plain, clock, "Prefers window seats.", "prefers  WINDOW seats")
    report = plain.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
    assert [len(m.from_notes) for m in report.memories] == [2]
    assert "aisle" not in " ".join(m.text for m in report.memories)
    assert any(e.type is EventType.SESSION_CONSOLIDATED for e in plain.read_events(USER))
    assert not any(e.type is EventType.SESSION_CONSOLIDATED for e in plain.read_events("u2"))


def _planner(make: Any) -> Any:
    """A model answering the consolidation prompt with ``make(session ids, long-term ids)``."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        notes = json.loads(body["messages"][1]["content"].split("\n", 1)[1])
        session = [n["id"] for n in notes["session_notes"]]
        lasting = [n["id"] for n in notes["long_term_notes"]]
        return {"content": json.dumps(make(session, lasting))}

    return answer


def _with_long_term(engine: Engine, clock: FrozenClock, *texts: str) -> None:
    for text in texts:
        assert engine.save_memory_note(USER, DOMAIN, text, "global", session_id="s0").saved
        clock.advance(timedelta(minutes=5))


@pytest.mark.parametrize(
    "touch",
    [
        # dropped on the model's word, with no session note merged with or contradicting them
        lambda s, lt: {
            "memories": [{"text": "Likes green tea", "from_notes": s, "reason": "single"}],
            "dropped": [{"note_id": i, "reason": "superseded"} for i in lt],
            "conflicts": [],
        },
        # rewritten into a memory no session note is part of
        lambda s, lt: {
            "memories": [
                {"text": "Likes green tea", "from_notes": s, "reason": "single"},
                {"text": "Is allergic to penicillin", "from_notes": lt, "reason": "paraphrase"},
            ],
            "dropped": [],
            "conflicts": [],
        },
        # a conflict between long-term notes alone is not this session's to settle
        lambda s, lt: {
            "memories": [{"text": "Likes green tea", "from_notes": s, "reason": "single"}],
            "dropped": [{"note_id": lt[0], "reason": "superseded"}],
            "conflicts": [{"note_ids": lt, "kept": lt[1], "description": "old notes disagree"}],
        },
    ],
    ids=["dropped", "rewritten", "conflict-without-the-session"],
)
def test_a_plan_cannot_change_long_term_notes_the_session_did_not_touch(
    clock: FrozenClock, touch: Any
) -> None:
    with Engine(clock=clock, llm=MemoryLLM(_planner(touch))) as engine:
        _with_long_term(engine, clock, "Prefers window seats", "Is vegetarian")
        _save(engine, clock, "Likes green tea")
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert report.method == "fallback" and report.fallback_reason is not None
        assert "no session note" in report.fallback_reason
        assert sorted(_lasting(engine)) == ["Is vegetarian", "Likes green tea",
                                            "Prefers window seats"]  # fmt: skip


def test_a_plan_drops_a_long_term_note_a_session_note_contradicts(clock: FrozenClock) -> None:
    def settle(session: list[str], lasting: list[str]) -> dict[str, Any]:
        return {
            "memories": [{"text": "Eats meat again", "from_notes": session, "reason": "recency"}],
            "dropped": [{"note_id": lasting[1], "reason": "superseded"}],
            "conflicts": [{"note_ids": [lasting[1], *session], "kept": session[0],
                           "description": "no longer vegetarian"}],
        }  # fmt: skip

    with Engine(clock=clock, llm=MemoryLLM(_planner(settle))) as engine:
        _with_long_term(engine, clock, "Prefers window seats", "Is vegetarian")
        _save(engine, clock, "Eats meat again")
        report = engine.consolidate(USER, DOMAIN, SESSION).result(timeout=10)
        assert report.method == "llm", report.fallback_reason
        assert sorted(_lasting(engine)) == ["Eats meat again", "Prefers window seats"]
