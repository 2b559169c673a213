"""Consolidation promotes to long-term memory only what the user meant to last."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.lifecycle.promote import promote

SEAT = {"user_id": "u1", "domain": "travel", "key": "seat.preference", "source": "dialogue"}


def _write(engine: Engine, clock: FrozenClock, value: str, **fields: Any) -> None:
    clock.advance(timedelta(minutes=1))
    engine.ingest({**SEAT, "value": value, "observed_at": clock.now().isoformat(), **fields})


def _consolidate(engine: Engine) -> Any:
    return engine.consolidate("u1", "travel", "s1").result(timeout=30)


def _long_term(engine: Engine) -> Any:
    return engine.resolve("u1", "travel", "seat.preference").value


def test_a_turn_instruction_never_becomes_long_term(engine: Engine, clock: FrozenClock) -> None:
    engine.ingest({**SEAT, "value": "window",
                   "observed_at": (clock.now() - timedelta(days=30)).isoformat()})  # fmt: skip
    _write(engine, clock, "aisle", scope="turn", session_id="s1",
           provenance={"source_ref": "t1"})  # fmt: skip
    report = _consolidate(engine)
    assert _long_term(engine) == "window"
    assert report.facts == ()
    assert [why for _, why in report.held_back] == ["a one-turn instruction"]


def test_a_single_session_mention_stays_in_the_session(engine: Engine, clock: FrozenClock) -> None:
    engine.ingest({**SEAT, "value": "window"})
    _write(engine, clock, "aisle", scope="session", session_id="s1")
    _consolidate(engine)
    assert _long_term(engine) == "window"
    assert engine.resolve("u1", "travel", "seat.preference", session_id="s1").value == "aisle"


def test_what_the_user_meant_to_last_is_promoted(engine: Engine, clock: FrozenClock) -> None:
    engine.ingest({**SEAT, "value": "window"})
    _write(engine, clock, "aisle", scope="session", session_id="s1", change=True)  # from now on
    assert [f.value for f in _consolidate(engine).facts] == ["aisle"]
    assert _long_term(engine) == "aisle"


def test_a_repeated_preference_is_promoted(engine: Engine, clock: FrozenClock) -> None:
    _write(engine, clock, "aisle", scope="session", session_id="s0")
    _write(engine, clock, "aisle", scope="session", session_id="s1")
    assert [f.value for f in _consolidate(engine).facts] == ["aisle"]
    assert _long_term(engine) == "aisle"


def test_a_confirmed_fact_is_promoted(engine: Engine, clock: FrozenClock) -> None:
    city = {"user_id": "u1", "domain": "travel", "key": "location.city", "value": "city:shanghai",
            "source": "dialogue", "scope": "session", "session_id": "s1"}  # fmt: skip
    pending = engine.ingest(city)
    engine.confirm("u1", pending.fact_id)
    assert [f.value for f in _consolidate(engine).facts] == ["city:shanghai"]
    assert engine.resolve("u1", "travel", "location.city").value == "city:shanghai"


def test_consolidating_a_session_again_leaves_a_confirmed_promotion_as_it_is(
    engine: Engine,
) -> None:
    """The second run's ingest is the first's (same idempotency key), whose stored status was
    pending: the promoted fact, confirmed since, is not confirmed a second time."""
    city = {"user_id": "u1", "domain": "travel", "key": "location.city", "value": "city:shanghai",
            "source": "dialogue", "scope": "session", "session_id": "s1"}  # fmt: skip
    engine.confirm("u1", engine.ingest(city).fact_id)
    first = _consolidate(engine)
    written = len(engine.read_events("u1"))
    again = _consolidate(engine)
    assert [f.fact_id for f in again.facts] == [f.fact_id for f in first.facts]
    assert again.facts[0].duplicate
    [promoted] = [f for f in engine.facts("u1", "travel") if f.id == first.facts[0].fact_id]
    assert promoted.status.value == "active"
    assert len(engine.read_events("u1")) - written <= 1  # the consolidation record at most


def test_a_promotion_left_pending_by_an_interrupted_run_is_confirmed_by_the_next(
    engine: Engine,
) -> None:
    """A run that stored the promotion but stopped before confirming it: the rerun's ingest
    is a duplicate, and the fact it names is still pending, so the rerun confirms it."""
    city = {"user_id": "u1", "domain": "travel", "key": "location.city", "value": "city:shanghai",
            "source": "dialogue", "scope": "session", "session_id": "s1"}  # fmt: skip
    engine.confirm("u1", engine.ingest(city).fact_id)

    class Interrupted:
        def __getattr__(self, name: str) -> Any:
            return getattr(engine, name)

        def confirm(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("stopped before confirming")

    with pytest.raises(RuntimeError):
        promote(Interrupted(), "u1", "travel", "s1")  # type: ignore[arg-type]
    [left] = [f for f in engine.facts("u1", "travel") if f.scope.value == "global"]
    assert left.status.value == "pending_confirmation"
    [promoted], _ = promote(engine, "u1", "travel", "s1")
    assert promoted.duplicate and promoted.fact_id == left.id
    [stored] = [f for f in engine.facts("u1", "travel") if f.id == left.id]
    assert stored.status.value == "active"


def test_every_session_fact_left_in_the_session_is_listed_with_why(engine: Engine) -> None:
    """A state and a fact awaiting confirmation stay in the session too: the report's
    held_back lists them with the reason, as it lists what was said once."""
    in_session = {"user_id": "u1", "domain": "travel", "scope": "session", "session_id": "s1"}
    state = engine.ingest({**in_session, "key": "travel.companions", "value": 2,
                           "source": "dialogue"})  # fmt: skip
    pending = engine.ingest({**in_session, "key": "location.city", "value": "city:shanghai",
                             "source": "dialogue"})  # fmt: skip
    assert pending.status.value == "pending_confirmation"
    report = _consolidate(engine)
    assert dict(report.held_back) == {
        state.fact_id: "a state: it holds for a while, never for good",
        pending.fact_id: "awaiting the user's confirmation",
    }
