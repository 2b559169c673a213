"""The DecisionLog contract, for both adapters; erasure removes a user's decisions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, NotFound
from memkg.config import EngineConfig
from memkg.decisions import DecisionLog, MemoryDecisionLog, SqliteDecisionLog, differences
from memkg.errors import InvalidOperation

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DecisionLog]:
    made: DecisionLog = (
        MemoryDecisionLog() if request.param == "memory" else SqliteDecisionLog(tmp_path / "d.db")
    )
    yield made
    made.close()


def test_contract(log: DecisionLog) -> None:
    engine = Engine(clock=FrozenClock(NOW), config=EngineConfig(shacl=False), decision_log=log)
    engine.ingest(
        {
            "user_id": "u",
            "domain": "finance",
            "key": "risk.profile",
            "value": "risk:conservative",
            "source": "profile",
            "confidence": 0.95,
            "provenance": {"consent_granted": True, "consent_version": "v1"},
        }
    )
    first = engine.decide(
        "u", "finance", {"product_type": "etf", "product_risk": "growth", "amount": 100}
    )
    second = engine.decide("v", "finance", {"product_type": "bonds", "amount": 1})
    assert log.get(first.decision_id) == first
    assert [d.decision_id for d in log.for_user("u")] == [first.decision_id]
    with pytest.raises(InvalidOperation):
        log.append(first)
    assert log.bundle(first.revisions.rule_bundle) is not None
    assert log.erase_user("u") == 1
    with pytest.raises(NotFound):
        log.get(first.decision_id)
    assert log.get(second.decision_id) == second


def test_sqlite_erasure_leaves_no_byte_of_the_user(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=FrozenClock(NOW), config=EngineConfig(shacl=False)) as engine:
        engine.ingest(
            {
                "user_id": "zhang-wei-7781",
                "domain": "finance",
                "key": "risk.profile",
                "value": "risk:growth",
                "source": "profile",
                "provenance": {"consent_granted": True, "consent_version": "v1"},
            }
        )
        made = engine.decide("zhang-wei-7781", "finance", {"product_type": "etf", "amount": 5})
        receipt = engine.erase("zhang-wei-7781")
        assert receipt.removed["decisions"] == 1
        with pytest.raises(NotFound):
            engine.explain(made.decision_id)
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert b"zhang-wei-7781" not in data and made.decision_id.encode() not in data, path


def test_differences_name_paths() -> None:
    found = differences(
        {"result": {"action": "a"}, "timings": {"x": 1}},
        {"result": {"action": "b"}, "timings": {"x": 2}},
    )
    assert [str(d) for d in found] == ["$.result.action: recorded a, replayed b"]
