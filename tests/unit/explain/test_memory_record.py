"""A decision's explanation carries the arbitration record of every key its rules read."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memkg import Engine, EngineConfig, FrozenClock
from memkg.engine.trace_record import decision_trace


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


def _as_validated(model: Any) -> None:
    """``model`` is what validating its own fields gives: equal, the same fields set, and
    every field's value of the same type (a float stays a float, text is plain ``str``)."""
    again = type(model)(**{name: getattr(model, name) for name in model.model_fields_set})
    assert again == model
    assert again.model_fields_set == model.model_fields_set
    assert again.model_dump_json() == model.model_dump_json()
    for name in type(model).model_fields:
        assert type(getattr(again, name)) is type(getattr(model, name)), name


def test_memory_nodes_and_claim_trace_items_are_built_as_validation_builds_them() -> None:
    # ``memory_nodes`` and the trace's claim items skip validation (``Shape.build``): their
    # values are already of the fields' types
    engine = _say_vs_do()
    engine.ingest({"user_id": "ana", "domain": "commerce", "key": "purchase.intent",
                   "value": {"category": "category:laptop", "buying": True},
                   "source": "behavior", "confidence": 0.7})  # fmt: skip
    made = engine.decide("ana", "commerce", {}, decision="recommendation")
    assert made.trace_id is not None
    nodes = made.explanation.memory
    assert nodes and any(n.claims for n in nodes)
    for node in nodes:
        _as_validated(node)
        for claim in node.claims:
            _as_validated(claim)
    items = [i for i in engine.trace(made.trace_id).items if i.kind == "claim"]
    assert len(items) == sum(len(n.claims) for n in nodes)
    for item in decision_trace("trc_x", made).items:
        _as_validated(item)
