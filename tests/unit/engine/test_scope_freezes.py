"""A freeze is judged outside every session: a context slot that only a session's note bears
reads there as the general slot, and a write or a merge that touches it freezes nothing of
its own (it froze the general slot a second time, with a second review of the same slot)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memkg import Engine, FrozenClock

LEISURE = {"trip_type": "leisure"}


def _seat(engine: Engine, clock: FrozenClock, value: str, user: str = "u1", **more: Any) -> str:
    clock.advance(timedelta(minutes=1))
    made = engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                          "value": value, "confidence": 0.9, "source": "profile",
                          **more})  # fmt: skip
    assert made.fact_id is not None
    return made.fact_id


def _reviews(engine: Engine) -> list[dict[str, str]]:
    return [dict(r.context) for r in engine.review_queue()]


def test_a_session_note_of_a_context_beside_a_frozen_general_slot_freezes_nothing(
    engine: Engine, clock: FrozenClock
) -> None:
    window = _seat(engine, clock, "window", context=LEISURE)
    aisle = _seat(engine, clock, "aisle", context=LEISURE, source="system")
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, "window", "asked the user")
    for fact_id in (window, aisle):  # the leisure slot keeps no long-term claim
        engine.retract("u1", fact_id, "said by mistake")
    _seat(engine, clock, "aisle")
    _seat(engine, clock, "window", source="system")
    assert _reviews(engine) == [{}]
    _seat(engine, clock, "middle", scope="session", session_id="s1", context=LEISURE,
          source="dialogue")  # fmt: skip
    note = _seat(engine, clock, "middle", scope="session", session_id="s2", source="dialogue")
    engine.retract("u1", note, "said by mistake")  # a write that reads every scope's claims
    assert _reviews(engine) == [{}]
    frozen = [e for e in engine.read_events("u1") if e.type.value == "key.frozen"]
    assert len(frozen) == 2  # the leisure slot's, then the general slot's


def test_a_merge_freezes_the_general_slot_once_beside_a_session_note_of_a_context(
    engine: Engine, clock: FrozenClock
) -> None:
    _seat(engine, clock, "aisle")
    _seat(engine, clock, "window", user="u2")
    _seat(engine, clock, "middle", user="u2", scope="session", session_id="s1",
          context=LEISURE, source="dialogue")  # fmt: skip
    proposed = engine.merge_users("u1", "u2", by="admin", reason="same person")
    engine.merge_users("u1", "u2", by="admin", reason="same person", confirm=proposed.merge_id)
    assert _reviews(engine) == [{}]
    held = engine.resolve("u1", "travel", "seat.preference", context=LEISURE)
    assert (held.outcome.value, held.context) == ("frozen", {})
