"""A decision reads what a review settled, and only the frozen keys it reads hold it back."""

from __future__ import annotations

from datetime import timedelta

from memkg import Engine, FrozenClock
from support.observations import obs


def _conflict(engine: Engine, clock: FrozenClock, key: str, one: object, other: object) -> None:
    for value, source in ((one, "behavior"), (other, "profile")):
        engine.ingest(obs(key=key, value=value, source=source, confidence=0.9))
        clock.advance(timedelta(seconds=5))
    assert engine.resolve("u1", "travel", key).outcome.value == "frozen"


def test_a_value_a_reviewer_settled_on_is_what_the_rules_read(
    engine: Engine, clock: FrozenClock
) -> None:
    """A reviewer may settle a key on a value no claim carries: the rules read it, as
    ``resolve`` gives it, and the decision replays."""
    _conflict(engine, clock, "seat.preference", "aisle", "middle")
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, "window", "asked the user", reviewer="ops")
    assert engine.resolve("u1", "travel", "seat.preference").value == "window"
    made = engine.decide("u1", "travel", {}, decision="offers")
    assert (made.result.status.value, made.result.action) == ("decided", "present_offers")
    assert [c.rule_id for c in made.candidates] == ["travel.window_seat"]
    assert engine.replay(made.decision_id).reproduced


def test_a_review_settled_on_a_claimed_value_counts_it_once(
    engine: Engine, clock: FrozenClock
) -> None:
    _conflict(engine, clock, "seat.preference", "window", "aisle")
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, "window", "asked the user", reviewer="ops")
    made = engine.decide("u1", "travel", {}, decision="offers")
    [candidate] = made.candidates
    assert candidate.rule_id == "travel.window_seat" and candidate.alternatives == 0


def test_a_frozen_key_no_rule_of_the_table_reads_holds_nothing_back(
    engine: Engine, clock: FrozenClock
) -> None:
    """Offers read the seat, not the preferred airline: a conflict on the airline is the
    booking table's to wait for."""
    _conflict(engine, clock, "airline.preferred", "airline:MU", "airline:CA")
    engine.ingest(obs(key="seat.preference", value="window", source="dialogue"))
    offers = engine.decide("u1", "travel", {}, decision="offers")
    assert (offers.result.status.value, offers.result.action) == ("decided", "present_offers")
    booking = engine.decide("u1", "travel", {"airline": "airline:CA"})
    assert booking.result.status.value == "needs_review"
    assert engine.replay(offers.decision_id).reproduced


def test_a_frozen_keys_edges_and_paths_are_not_decidable(
    engine: Engine, clock: FrozenClock
) -> None:
    """What ``edges`` and ``paths`` call decidable is what a decision may use: not a claim of
    a key frozen for review, until the review is settled."""
    _conflict(engine, clock, "airline.preferred", "airline:MU", "airline:CA")
    edges = engine.edges("u1", "travel", "airline.preferred")
    assert edges and not any(e.decidable for e in edges)
    assert engine.edges("u1", "travel", "airline.preferred", decidable_only=True) == []
    hub = engine.paths("u1", "city:shanghai", domain="travel")
    assert hub and not any(p.decidable for p in hub)
    exported = engine.graph("u1", "travel")
    assert isinstance(exported, dict)
    claims = [e for e in exported["edges"] if e["relation"] == "airline.preferred"]
    assert claims and not any(e["decidable"] for e in claims)
    [review] = engine.review_queue()
    engine.resolve_review(review.review_id, "airline:MU", "asked the user", reviewer="ops")
    assert any(e.decidable for e in engine.edges("u1", "travel", "airline.preferred"))
