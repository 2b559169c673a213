"""The reference scenario: a 3-year-old with asthma and fever, at night and by day."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
NIGHT = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)  # 22:15 in Shanghai
DAY = datetime(2026, 5, 1, 6, 0, tzinfo=UTC)  # 14:00 in Shanghai


@pytest.fixture(scope="module")
def world() -> tuple[Engine, FrozenClock, str]:
    clock = FrozenClock(NIGHT)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    for key, value in (("timezone", "Asia/Shanghai"), ("child.age", 3)):
        engine.ingest(
            {
                "user_id": "mei",
                "domain": "health",
                "key": key,
                "value": value,
                "source": "profile",
                "provenance": CONSENT,
            }
        )
    asthma = engine.ingest(
        {
            "user_id": "mei",
            "domain": "health",
            "key": "medical.conditions",
            "value": ["condition:asthma"],
            "source": "profile",
            "provenance": {**CONSENT, "source_ref": "clinic:record/7"},
        }
    )
    return engine, clock, asthma.fact_id


def test_night_fever_books_the_emergency_department(world: tuple[Engine, FrozenClock, str]) -> None:
    engine, clock, _ = world
    clock.set(NIGHT)
    decision = engine.decide("mei", "health", {"symptom": "fever"})
    assert decision.status.value == "decided"
    assert (decision.result.action, decision.result.urgency) == (
        "book_emergency_appointment",
        "critical",
    )
    [rule] = decision.explanation.selected
    assert rule.rule_id == "health.asthma_child_fever_night"
    texts = [c.text for c in rule.conditions]
    assert texts == [
        "child.age < 6",
        "path to protocol:immediate_hospital_visit via condition:asthma with weight ≥ 0.9",
        "local time outside 06:00–22:00",
        "symptom = fever",
    ]
    age, path, clock_cond, symptom = rule.conditions
    assert age.facts[0].value == 3 and age.facts[0].source == "profile"
    [found] = path.paths
    hop = found.hops[-1]
    assert (hop.source, hop.relation, hop.target, hop.weight) == (
        "condition:asthma",
        "requires",
        "protocol:immediate_hospital_visit",
        0.92,
    )
    assert found.hops[0].fact_id is not None and found.hops[0].factors
    assert clock_cond.context[0].value == "22:15" and symptom.context[0].value == "fever"
    text = engine.explain(decision.decision_id)
    for words in (
        "child.age is 3",
        "condition:asthma",
        "weight 0.92",
        "local time is 22:15",
        "symptom is fever",
        "clinic:record/7",
        "health.asthma_child_fever_night",
    ):
        assert words in text


def test_afternoon_fever_gets_a_different_action(world: tuple[Engine, FrozenClock, str]) -> None:
    engine, clock, _ = world
    clock.set(DAY)
    decision = engine.decide("mei", "health", {"symptom": "fever"})
    assert decision.result.action == "book_same_day_appointment"
    assert decision.explanation.local_time == "14:00"


def test_retracting_asthma_stops_the_rule_and_why_not_says_why(
    world: tuple[Engine, FrozenClock, str],
) -> None:
    engine, clock, asthma = world
    clock.set(NIGHT)
    before = engine.decide("mei", "health", {"symptom": "fever"})
    engine.retract("mei", asthma, "entered for the wrong child")
    after = engine.decide("mei", "health", {"symptom": "fever"})
    assert after.result.action != "book_emergency_appointment"
    assert "health.asthma_child_fever_night" not in [c.rule_id for c in after.candidates]
    [miss] = [
        w for w in after.explanation.why_not if w.rule_id == "health.asthma_child_fever_night"
    ]
    assert miss.failing.kind == "path" and miss.failing.index == 1
    assert "left out: retracted" in (miss.failing.failure or "")
    assert [lo.reason for lo in after.left_out] == ["retracted"]
    assert "Nearly applied" in engine.explain(after.decision_id)
    for made in (before, after):  # both replay exactly, before and after the retraction
        assert engine.replay(made.decision_id).reproduced


def test_a_frozen_key_makes_the_decision_need_review() -> None:
    engine = Engine(clock=FrozenClock(NIGHT), config=EngineConfig(shacl=False))
    for value, source in ((3, "profile"), (8, "system")):  # a strong conflict freezes the key
        engine.ingest({"user_id": "kai", "domain": "health", "key": "child.age", "value": value,
                       "source": source, "provenance": CONSENT})  # fmt: skip
    made = engine.decide("kai", "health", {"symptom": "fever"})
    assert made.status.value == "needs_review"
    assert made.problems == ("child.age is frozen until a reviewer settles conflicting claims",)
    assert {(lo.key, lo.reason) for lo in made.left_out} == {("child.age", "frozen")}
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, 3, "checked the birth certificate")
    assert engine.decide("kai", "health", {"symptom": "fever"}).status.value == "decided"
