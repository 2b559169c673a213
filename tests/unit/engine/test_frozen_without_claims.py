"""A key frozen for review holds a decision back even when none of its claims is left."""

from __future__ import annotations

from datetime import timedelta

from memkg import Engine, FrozenClock
from support.observations import T0, obs


def _frozen_then_forgotten(engine: Engine, clock: FrozenClock) -> None:
    mu = engine.ingest(obs(value="airline:MU", observed_at=(T0 - timedelta(hours=2)).isoformat()))
    ca = engine.ingest(obs(value="airline:CA", source="behavior", confidence=0.7,
                           observed_at=(T0 - timedelta(hours=1)).isoformat()))  # fmt: skip
    assert engine.resolve("u1", "travel", "airline.preferred").outcome.value == "frozen"
    for made in (mu, ca):
        assert made.fact_id is not None
        engine.retract("u1", made.fact_id, "never said")


def test_a_frozen_key_whose_claims_were_all_retracted_still_holds_the_decision(
    engine: Engine, clock: FrozenClock
) -> None:
    _frozen_then_forgotten(engine, clock)
    held = engine.resolve("u1", "travel", "airline.preferred")
    assert held.outcome.value == "frozen" and held.review_id is not None
    made = engine.decide("u1", "travel", {"airline": "airline:CA"})
    assert made.result.status.value == "needs_review", made.result
    assert made.result.action != "show_standard_options"
    assert "airline.preferred" in made.explanation.model_dump_json()
    assert engine.replay(made.decision_id).reproduced
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, "airline:CA", "confirmed by phone")
    settled = engine.decide("u1", "travel", {"airline": "airline:CA"})
    assert settled.result.status.value == "decided"
