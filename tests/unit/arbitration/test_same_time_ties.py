"""Claims observed at the same instant resolve the same whatever order they arrive in."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memkg.clock import FrozenClock
from memkg.engine import Engine

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
AT = "2026-04-30T10:00:00+00:00"


def _write(order: list[dict[str, Any]]) -> Engine:
    engine = Engine(clock=FrozenClock(NOW))
    for fields in order:
        engine.ingest({"user_id": "u1", "domain": "travel", "source": "dialogue",
                       "confidence": 0.9, "observed_at": AT, **fields})  # fmt: skip
    return engine


def _state(engine: Engine, key: str) -> tuple[Any, ...]:
    held = engine.resolve("u1", "travel", key)
    decision = engine.decide("u1", "travel", {"trip_type": "business"}, decision="offers")
    return held.value, held.outcome, decision.result.action, decision.result.parameters


@pytest.mark.parametrize(
    "writes",
    [
        [{"key": "cabin.class", "value": "business"}, {"key": "cabin.class", "value": "economy"}],
        [
            {"key": "seat.preference", "value": "window", "scope": "turn", "session_id": "s1"},
            {"key": "seat.preference", "value": "aisle", "scope": "turn", "session_id": "s1"},
        ],
        [
            {"key": "cabin.class", "value": "first", "change": True},
            {"key": "cabin.class", "value": "business", "change": True},
        ],
    ],
)
def test_arrival_order_does_not_decide_a_same_time_tie(writes: list[dict[str, Any]]) -> None:
    key = writes[0]["key"]
    forward, backward = _write(writes), _write(writes[::-1])
    assert _state(forward, key) == _state(backward, key)
    s1 = {"session_id": "s1"}
    assert (forward.resolve("u1", "travel", key, **s1).value
            == backward.resolve("u1", "travel", key, **s1).value)  # fmt: skip


def test_a_same_time_change_from_another_source_competes_in_any_order() -> None:
    writes = [
        {"key": "cabin.class", "value": "first", "change": True, "confidence": 0.3},
        {"key": "cabin.class", "value": "business", "source": "behavior", "confidence": 0.3},
    ]
    forward, backward = _write(writes), _write(writes[::-1])
    assert _state(forward, "cabin.class") == _state(backward, "cabin.class")
    assert forward.resolve("u1", "travel", "cabin.class").value == "business"  # 0.27 > 0.21
