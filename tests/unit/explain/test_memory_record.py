"""A decision's explanation carries the arbitration record of every key its rules read."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memkg import Engine, EngineConfig, FrozenClock


def _say_vs_do() -> Engine:
    engine = Engine(clock=FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC)),
                    config=EngineConfig(shacl=False))  # fmt: skip
    base = {"user_id": "ana", "domain": "commerce", "key": "purchase.intent"}
    engine.ingest({**base, "value": {"category": "category:phone", "buying": False},
                   "source": "dialogue", "confidence": 0.6})  # fmt: skip
    engine.ingest({**base, "value": {"category": "category:phone", "buying": True},
                   "source": "behavior", "confidence": 0.9})  # fmt: skip
    return engine


def test_the_explanation_names_claims_scores_and_the_deciding_step() -> None:
    engine = _say_vs_do()
    made = engine.decide("ana", "commerce", {}, decision="recommendation")
    [memory] = [m for m in made.explanation.memory if m.key == "purchase.intent"]
    assert (memory.outcome, memory.step) == ("provisional", "weighted_evidence")
    assert memory.strength == 0.42
    assert {(c.source, c.standing, c.score) for c in memory.claims} == {
        ("behavior", "won", 0.81),
        ("dialogue", "lost", 0.42),
    }
    assert memory.question
    text = engine.explain(made.decision_id, "text")
    assert "What memory held" in text and "weighted evidence" in text and "score 0.42" in text
    as_json = json.loads(engine.explain(made.decision_id, "json"))
    assert as_json["memory"][0]["step"] == "weighted_evidence"
    assert engine.replay(made.decision_id).reproduced
