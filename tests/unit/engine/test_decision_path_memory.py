"""A key read only through a path condition (the health triage rules reach asthma through the
graph, never through a ``medical.conditions`` fact condition) has its arbitration record in
the explanation's memory section, as a key a condition reads does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision

NOW = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)
CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "care"}


def _engine(dissent: float) -> Engine:
    engine = Engine(clock=FrozenClock(NOW))
    for key, value, source, confidence in (
        ("timezone", "Asia/Shanghai", "profile", 1.0),
        ("child.age", 3, "profile", 1.0),
        ("medical.conditions", ["condition:asthma"], "profile", 1.0),
        ("medical.conditions", [], "third_party", dissent),
    ):
        made = engine.ingest({"user_id": "u", "domain": "health", "key": key, "value": value,
                              "source": source, "confidence": confidence,
                              "provenance": CONSENT})  # fmt: skip
        if made.status.value == "pending_confirmation":
            engine.confirm("u", made.fact_id or "")
    return engine


def _node(made: Decision, key: str) -> Any:
    found = [m for m in made.explanation.memory if m.key == key]
    assert len(found) == 1, [m.key for m in made.explanation.memory]
    return found[0]


def test_a_key_read_through_a_path_has_its_record() -> None:
    engine = _engine(0.3)
    made = engine.decide("u", "health", {"symptom": "fever"})
    assert made.result.action == "book_emergency_appointment"
    node = _node(made, "medical.conditions")
    assert node.value == ["condition:asthma"] and node.outcome == "provisional"
    assert node.question
    assert "medical.conditions = condition:asthma: provisional" in engine.explain(
        made.decision_id, "text"
    )
    assert engine.replay(made.decision_id).reproduced


def test_a_frozen_key_read_through_a_path_has_its_record() -> None:
    engine = _engine(0.9)
    made = engine.decide("u", "health", {"symptom": "fever"})
    assert made.result.status.value == "needs_review"
    assert _node(made, "medical.conditions").outcome == "frozen"
    assert engine.replay(made.decision_id).reproduced


def test_an_entity_key_of_a_table_without_paths_is_shown_only_when_read() -> None:
    engine = Engine(clock=FrozenClock(NOW))
    engine.ingest({"user_id": "u", "domain": "travel", "key": "airline.preferred",
                   "value": "airline:MU", "source": "behavior", "confidence": 0.9})  # fmt: skip
    offers = engine.decide("u", "travel", {"trip_type": "leisure"}, decision="offers")
    assert "airline.preferred" not in {m.key for m in offers.explanation.memory}
    booking = engine.decide("u", "travel", {"airline": "airline:CA"}, decision="booking")
    assert _node(booking, "airline.preferred").value == "airline:MU"
