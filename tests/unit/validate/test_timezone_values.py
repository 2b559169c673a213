"""A ``timezone`` value is a zone the time zone database knows: a typo passed the key's
pattern, was stored, and decisions read the local clock in UTC under its name (a child's
fever at 22:15 in Shanghai was decided on as 14:15)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memkg import Engine, FrozenClock, ValidationFailed


@pytest.mark.parametrize("zone", ["Asia/Shangai", "Mars/Olympus", "UTC/Nowhere"])
def test_a_time_zone_the_database_does_not_know_is_refused(zone: str) -> None:
    with Engine(clock=FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC))) as engine:
        with pytest.raises(ValidationFailed) as refused:
            engine.ingest({"user_id": "u", "domain": "health", "key": "timezone",
                           "value": zone, "source": "profile"})  # fmt: skip
        [problem] = refused.value.report.problems
        assert problem.code == "value.timezone" and repr(zone) in problem.message
        assert engine.read_events("u") == []


def test_a_known_zone_is_read_as_the_local_clock() -> None:
    with Engine(clock=FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC))) as engine:
        engine.ingest({"user_id": "u", "domain": "health", "key": "timezone",
                       "value": "Asia/Shanghai", "source": "profile"})  # fmt: skip
        made = engine.decide("u", "health", {"symptom": "fever"})
        assert "Local time 22:15 (Asia/Shanghai)" in engine.explain(made.decision_id)
