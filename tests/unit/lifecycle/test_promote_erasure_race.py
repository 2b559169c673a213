"""A consolidation racing its user's erasure or a purge by audit id writes nothing back.

Promote reads the session's facts and their history, then restates what lasts. An erasure
that lands between the reads and the writes is seen (the store's purge count moved) and the
promotion is worked out again from what is left; one that comes while a restatement is being
written waits for it (the engine's write lock), and removes it with the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from memkg import Engine

USER, DOMAIN = "u1", "health"


def _repeated(engine: Engine, audit: str | None = None) -> None:
    """Stated in two sessions: a repeated preference, promoted at the end of s1."""
    provenance = {"audit_log_id": audit} if audit else {}
    for session in ("s0", "s1"):
        engine.ingest({"user_id": USER, "domain": DOMAIN, "key": "contact.preference",
                       "value": "sms", "source": "dialogue", "scope": "session",
                       "session_id": session, "provenance": provenance})  # fmt: skip


def _paused_at(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, method: str, *, after: bool = False
) -> tuple[threading.Event, threading.Event]:
    """Pause the consolidation thread at its first call of ``engine.<method>`` (before the
    call, or ``after`` it returned)."""
    real: Callable[..., Any] = getattr(engine, method)
    paused, go = threading.Event(), threading.Event()
    main = threading.current_thread()

    def pause() -> None:
        if threading.current_thread() is not main and not paused.is_set():
            paused.set()
            assert go.wait(timeout=10)

    def pausing(*args: Any, **kwargs: Any) -> Any:
        if not after:
            pause()
        found = real(*args, **kwargs)
        if after:
            pause()
        return found

    monkeypatch.setattr(engine, method, pausing)
    return paused, go


ERASURES: dict[str, Callable[[Engine], object]] = {
    "erase": lambda engine: engine.erase(USER),
    "erase_audit_id": lambda engine: engine.erase_audit_id("audit-1"),
}


@pytest.mark.parametrize("erasure", sorted(ERASURES))
def test_an_erasure_between_the_reads_and_the_write_is_seen(
    eng: Engine, monkeypatch: pytest.MonkeyPatch, erasure: str
) -> None:
    _repeated(eng, "audit-1")
    # the history of the fact to restate read, its restatement not yet written
    paused, go = _paused_at(eng, monkeypatch, "history", after=True)
    handle = eng.consolidate(USER, DOMAIN, "s1")
    assert paused.wait(timeout=10)
    ERASURES[erasure](eng)
    go.set()
    report = handle.result(timeout=10)
    assert report.facts == () and eng.facts(USER, DOMAIN) == []
    assert eng.read_events(USER) == []


@pytest.mark.parametrize("erasure", sorted(ERASURES))
def test_an_erasure_during_the_write_waits_and_removes_it(
    eng: Engine, monkeypatch: pytest.MonkeyPatch, erasure: str
) -> None:
    _repeated(eng, "audit-1")
    paused, go = _paused_at(eng, monkeypatch, "ingest")
    # the restatement written, the consolidation not yet done
    resolving, resolve = _paused_at(eng, monkeypatch, "resolve")
    handle = eng.consolidate(USER, DOMAIN, "s1")
    assert paused.wait(timeout=10)
    erasing = threading.Thread(target=ERASURES[erasure], args=(eng,))
    erasing.start()
    go.set()
    assert resolving.wait(timeout=10)
    erasing.join(timeout=10)
    assert not erasing.is_alive()
    assert eng.facts(USER, DOMAIN) == [] and eng.read_events(USER) == []  # written, then erased
    resolve.set()
    assert handle.result(timeout=10).facts == ()  # and the report does not cite it


def test_a_promotion_another_writer_races_is_made_again(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write of the agent between the reads and the restatement is no erasure: the
    promotion goes through."""
    _repeated(eng)
    paused, go = _paused_at(eng, monkeypatch, "history", after=True)
    handle = eng.consolidate(USER, DOMAIN, "s1")
    assert paused.wait(timeout=10)
    eng.ingest({"user_id": USER, "domain": DOMAIN, "key": "contact.preference", "value": "app",
                "source": "dialogue", "scope": "session", "session_id": "s2"})  # fmt: skip
    go.set()
    [promoted] = handle.result(timeout=10).facts
    assert (promoted.value, promoted.duplicate) == ("sms", False)
    assert promoted.fact_id in {f.id for f in eng.facts(USER, DOMAIN)}
