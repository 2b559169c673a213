"""A ``timezone`` value is a zone the time zone database knows: a typo passed the key's
pattern, was stored, and decisions read the local clock in UTC under its name (a child's
fever at 22:15 in Shanghai was decided on as 14:15)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, ValidationFailed


@pytest.mark.parametrize("zone", ["Asia/Shangai", "Mars/Olympus", "UTC/Nowhere", "Asia", "Etc"])
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


def test_a_zone_folder_in_the_request_is_refused_as_a_request() -> None:
    """"Asia" names a folder of the database: reading it raised IsADirectoryError."""
    with Engine(clock=FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC))) as engine:
        made = engine.decide("u", "health", {"symptom": "fever", "timezone": "Asia"})
        assert made.result.status.value == "invalid_input"


def test_a_zone_stored_before_it_was_checked_is_held_back_by_consolidation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's ``timezone`` fact stored before zones were checked cannot be restated as
    long-term memory now: consolidation holds it back and merges the rest (it raised, on
    every attempt)."""
    from memkg import EngineConfig
    from memkg.validate import validator

    db = tmp_path / "m.db"
    clock = FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC))
    fact = {"user_id": "u", "domain": "health", "key": "timezone", "value": "Asia/Shangai",
            "source": "profile", "scope": "session", "session_id": "s1", "change": True}
    with monkeypatch.context() as unchecked:
        unchecked.setattr(validator, "_zone_problems", lambda spec, value: [])
        with Engine(clock=clock, config=EngineConfig(db=str(db))) as engine:
            engine.ingest(fact)
            engine.ingest({**fact, "scope": "session"})  # said twice: meant to last
    with Engine(clock=clock, config=EngineConfig(db=str(db))) as engine:
        report = engine.consolidate("u", "health", "s1").result(timeout=10)
        assert any("value.timezone" in why for _, why in report.held_back), report.held_back
