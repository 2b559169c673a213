"""The profile says where a value comes from when no claim carries it."""

from __future__ import annotations

from datetime import timedelta

from memkg import Engine, FrozenClock
from support.observations import T0, obs


def test_a_reviewers_value_with_no_claim_left_is_shown_as_the_reviewers(
    engine: Engine, clock: FrozenClock
) -> None:
    mu = engine.ingest(obs(value="airline:MU", observed_at=(T0 - timedelta(hours=2)).isoformat()))
    ca = engine.ingest(obs(value="airline:CA", source="behavior", confidence=0.7,
                           observed_at=(T0 - timedelta(hours=1)).isoformat()))  # fmt: skip
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, "airline:CA", "confirmed by phone")
    for made in (mu, ca):
        assert made.fact_id is not None
        engine.retract("u1", made.fact_id, "never said")
    block = engine.render_profile("u1", "travel").text
    line = next(x for x in block.splitlines() if "airline.preferred" in x)
    assert "source: review" in line and "source: default" not in line, line
