"""Which context slot a read resolves: a context with no claims of its own reads the general
slot, and a claim the user had forgotten (retracted) is no claim of its own."""

from __future__ import annotations

from collections.abc import Callable

from memkg.arbitration import Outcome
from memkg.engine import Engine, IngestResult

Ingest = Callable[..., IngestResult]
BUSINESS = {"trip_type": "business"}


def test_a_slot_whose_claims_were_retracted_reads_the_general_slot(
    engine: Engine, ingest: Ingest
) -> None:
    ingest("seat.preference", "window", "dialogue", 0.9)
    ingest("cabin.class", "business", "dialogue", 0.9)
    business = ingest("seat.preference", "aisle", "dialogue", 0.9, context=BUSINESS)
    assert engine.resolve("u1", "travel", "seat.preference", context=BUSINESS).value == "aisle"

    engine.retract("u1", business.fact_id, "the user never said that")
    held = engine.resolve("u1", "travel", "seat.preference", context=BUSINESS)
    never = engine.resolve("u1", "travel", "seat.preference", context={"trip_type": "family"})
    assert (held.value, held.outcome, held.context) == ("window", Outcome.ADOPTED, {})
    assert held == never  # as if the business claim had never been stored

    made = engine.decide("u1", "travel", BUSINESS, decision="offers")
    rules = [item["rule"] for item in made.result.parameters["items"]]
    assert rules == ["travel.window_seat", "travel.business_lounge"]
    assert engine.replay(made.decision_id).reproduced


def test_a_slot_with_a_live_claim_left_is_still_read_on_its_own(
    engine: Engine, ingest: Ingest
) -> None:
    ingest("seat.preference", "window", "dialogue", 0.9)
    ingest("seat.preference", "aisle", "behavior", 0.9, context=BUSINESS)
    retracted = ingest("seat.preference", "aisle", "dialogue", 0.9, context=BUSINESS)
    engine.retract("u1", retracted.fact_id, "said by mistake")
    held = engine.resolve("u1", "travel", "seat.preference", context=BUSINESS)
    assert (held.value, held.context) == ("aisle", BUSINESS)


def test_a_slot_a_review_governs_is_read_on_its_own_after_its_claims_are_retracted(
    engine: Engine, ingest: Ingest
) -> None:
    """As in the general slot, the reviewer's value outlives the claims it settled."""
    ingest("seat.preference", "window", "dialogue", 0.9)
    claims = [ingest("seat.preference", "aisle", "dialogue", 0.9, context=BUSINESS),
              ingest("seat.preference", "middle", "behavior", 0.9, context=BUSINESS)]  # fmt: skip
    [review] = engine.review_queue()
    assert review.context == BUSINESS
    engine.retract("u1", claims[0].fact_id, "forget it")
    frozen = engine.resolve("u1", "travel", "seat.preference", context=BUSINESS)
    assert (frozen.outcome, frozen.context) == (Outcome.FROZEN, BUSINESS)
    engine.resolve_review(review.review_id, "aisle", "asked the traveller")
    engine.retract("u1", claims[1].fact_id, "forget it")
    held = engine.resolve("u1", "travel", "seat.preference", context=BUSINESS)
    assert (held.value, held.context, held.review_id) == ("aisle", BUSINESS, review.review_id)
