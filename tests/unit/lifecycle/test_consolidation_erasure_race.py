"""A purge that lands after the promotion and before the note merge leaves no trace in
what the consolidation reports or logs.

The promotion and the merge are one piece of work read at one purge count: when it moved
between them, the whole consolidation is worked out again, promotion included, and a
restatement the first attempt wrote that survived is still reported as this run's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memkg import ConcurrencyConflict, Engine, EventType, FrozenClock

USER, DOMAIN = "u1", "health"


def _session(engine: Engine, clock: FrozenClock) -> None:
    """s1 holds a repeated preference said under audit-1, a record under audit-2, a note."""
    said = {"audit_log_id": "audit-1"}
    for session in ("s0", "s1"):
        engine.ingest({"user_id": USER, "domain": DOMAIN, "key": "contact.preference",
                       "value": "sms", "source": "dialogue", "scope": "session",
                       "session_id": session, "provenance": said})  # fmt: skip
    engine.ingest({"user_id": USER, "domain": DOMAIN, "key": "timezone", "value": "Asia/Tokyo",
                   "source": "profile", "scope": "session", "session_id": "s1",
                   "provenance": {"audit_log_id": "audit-2"}})  # fmt: skip
    saved = engine.save_memory_note(
        USER, DOMAIN, "Prefers morning appointments", "session", session_id="s1",
        provenance={"audit_log_id": "audit-2", "consent_granted": True},
    )  # fmt: skip
    assert saved.saved, saved.reason
    clock.advance(timedelta(minutes=5))


def _paused_before(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, method: str
) -> tuple[threading.Event, threading.Event]:
    """Pause the consolidation thread at its first call of ``engine.<method>``."""
    real: Callable[..., Any] = getattr(engine, method)
    paused, go = threading.Event(), threading.Event()
    main = threading.current_thread()

    def pausing(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not main and not paused.is_set():
            paused.set()
            assert go.wait(timeout=10)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, method, pausing)
    return paused, go


def _closing(engine: Engine) -> dict[str, Any]:
    [event] = [e for e in engine.read_events(USER) if e.type is EventType.SESSION_CONSOLIDATED]
    return dict(event.payload)


def test_a_purge_between_promotion_and_merge_is_not_cited(
    eng: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(eng, clock)
    # promotion done (both restatements written), the notes not yet read for the merge
    paused, go = _paused_before(eng, monkeypatch, "note_book")
    handle = eng.consolidate(USER, DOMAIN, "s1")
    assert paused.wait(timeout=10)
    [erased] = [f.id for f in eng.facts(USER, DOMAIN)
                if f.key == "contact.preference" and f.scope.value == "global"]  # fmt: skip
    [receipt] = eng.erase_audit_id("audit-1")
    assert receipt.removed["facts"] == 3  # both session statements and the restatement
    go.set()
    report = handle.result(timeout=10)

    assert [(f.key, f.value, f.duplicate) for f in report.facts] == [
        ("timezone", "Asia/Tokyo", False)  # written by the first attempt, still this run's
    ]
    [kept] = [f.id for f in eng.facts(USER, DOMAIN) if f.scope.value == "global"]
    assert _closing(eng)["facts"] == [kept] == [report.facts[0].fact_id]
    logged = json.dumps([e.payload for e in eng.read_events(USER)])
    assert erased not in logged and "sms" not in logged
    assert [m.text for m in report.memories] == ["Prefers morning appointments"]


def test_an_erasure_of_the_user_between_promotion_and_merge_leaves_nothing(
    eng: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _session(eng, clock)
    paused, go = _paused_before(eng, monkeypatch, "note_book")
    handle = eng.consolidate(USER, DOMAIN, "s1")
    assert paused.wait(timeout=10)
    eng.erase(USER)
    go.set()
    report = handle.result(timeout=10)
    assert (report.method, report.facts, report.memories) == ("none", (), ())
    assert eng.read_events(USER) == []


def test_purges_under_every_attempt_give_up_with_an_accurate_message(
    eng: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The purge count is the store's: another user's purge forces a retry too, and the
    message does not pretend it was this user's memory."""
    _session(eng, clock)
    real, purged = eng.note_book, iter(range(100))

    def purging(user_id: str) -> Any:
        audit = f"other-{next(purged)}"  # another user's statement, purged before each merge
        eng.ingest({"user_id": "u2", "domain": DOMAIN, "key": "contact.preference",
                    "value": "app", "source": "dialogue",
                    "provenance": {"audit_log_id": audit}})  # fmt: skip
        eng.erase_audit_id(audit)
        return real(user_id)

    monkeypatch.setattr(eng, "note_book", purging)
    with pytest.raises(ConcurrencyConflict) as raised:
        eng.consolidate(USER, DOMAIN, "s1").result(timeout=10)
    assert raised.value.code == "consolidation.erased_meanwhile"
    assert "of this user or any other" in raised.value.message
    assert "no note was merged" in raised.value.message
    assert _closing_or_none(eng) is None
    # the restatements the first attempt wrote, at an unchanged count, stay
    assert {f.key for f in eng.facts(USER, DOMAIN) if f.scope.value == "global"} == {
        "contact.preference",
        "timezone",
    }


def _closing_or_none(engine: Engine) -> dict[str, Any] | None:
    found = [e for e in engine.read_events(USER) if e.type is EventType.SESSION_CONSOLIDATED]
    return dict(found[0].payload) if found else None
