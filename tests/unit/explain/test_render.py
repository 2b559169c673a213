"""Renderings come from the tree and read well; JSON round-trips to the same tree."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.explain import render
from memkg.model.explanation import Explanation

CONSENT = {"consent_granted": True, "consent_version": "v1"}


@pytest.fixture(scope="module")
def explanation() -> Explanation:
    engine = Engine(
        clock=FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC)),
        config=EngineConfig(shacl=False),
    )
    for key, value in (
        ("timezone", "Asia/Shanghai"),
        ("child.age", 3),
        ("medical.conditions", ["condition:asthma"]),
    ):
        engine.ingest(
            {
                "user_id": "u",
                "domain": "health",
                "key": key,
                "value": value,
                "source": "profile",
                "provenance": {**CONSENT, "source_ref": "ehr:1"},
            }
        )
    engine.ingest(
        {
            "user_id": "u",
            "domain": "health",
            "key": "medication.current",
            "value": ["salbutamol"],
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": CONSENT,
        }
    )
    return engine.decide("u", "health", {"symptom": "fever"}).explanation


def test_text_reads_as_sentences(explanation: Explanation) -> None:
    text = render(explanation, "text")
    assert text.startswith("Decision: Book the nearest emergency slot and tell the user to go now")
    assert "child.age is 3 (profile record, ehr:1, confidence 1" in text
    assert "condition:asthma → requires → protocol:immediate_hospital_visit: weight 0.92" in text
    assert "Nearly applied:" in text and "Local time 22:15 (Asia/Shanghai)" in text
    assert "{" not in text  # no raw data structures or unfilled templates


def test_markdown_and_json(explanation: Explanation) -> None:
    md = render(explanation, "md")
    assert md.startswith("## health / triage") and "### Why" in md and "- ✓ child.age < 6" in md
    data = json.loads(render(explanation, "json"))
    assert Explanation.model_validate(data) == explanation
    with pytest.raises(ValueError, match="unknown format"):
        render(explanation, "pdf")


def test_a_weight_reads_as_it_is_computed() -> None:
    """Signals add to 1 before multiplying, a rejection multiplies: every factor joined by ×
    read as a product that was negative (ignored −0.30)."""
    from memkg.explain.render import factors_text
    from memkg.model.evidence import WeightFactor

    made = [WeightFactor(name=n, value=v) for n, v in (
        ("confidence", 0.9), ("credibility", 0.7), ("time_decay", 1.0), ("rejection", 0.5),
        ("mention", 0.8), ("ignored", -0.3), ("correction", 0.5), ("clamp", 1.0))]  # fmt: skip
    assert factors_text(made) == (
        "confidence 0.90 × credibility 0.70 × time decay 1.00 × (1 + mention 0.80 − ignored "
        "0.30 + correction 0.50) × rejection 0.50, clamped to 1.00"
    )
    # a factor that is no signal (a rule case's fixture weight) reads as it is
    assert factors_text([WeightFactor(name="fixture", value=0.8)]) == "fixture 0.80"


def test_a_refused_local_time_is_not_shown_as_the_decisions() -> None:
    """A request sending ``local_time`` (derived from the clock, so refused) made an
    ``invalid_input`` decision whose text said "Local time 03:00 (None)"."""
    from memkg import Engine

    with Engine() as engine:
        made = engine.decide("u", "travel", {"local_time": "03:00"})
        assert made.result.status.value == "invalid_input"
        assert "Local time" not in engine.explain(made.decision_id)
