"""Scenarios of DESIGN section 5: say against do, moved city, frozen keys and their review."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from memkg.arbitration import Outcome, Standing, Step
from memkg.clock import FrozenClock
from memkg.engine import Engine, IngestResult
from memkg.errors import InvalidOperation, ValidationFailed
from memkg.model.event import EventType
from memkg.model.fact import FactStatus

Ingest = Callable[..., IngestResult]
PHONE_NO = {"category": "category:phone", "buying": False}
PHONE_YES = {"category": "category:phone", "buying": True}


def test_say_against_do_behaviour_wins_and_asks(engine: Engine, ingest: Ingest) -> None:
    for hours in range(66, -1, -6):  # twelve phones browsed in three days, newest last
        ingest("purchase.intent", PHONE_YES, "behavior", 0.9, domain="commerce",
               ago=timedelta(hours=hours))  # fmt: skip
    ingest("purchase.intent", PHONE_NO, "dialogue", 0.6, domain="commerce")

    zh = engine.resolve("u1", "commerce", "purchase.intent", language="zh")
    assert zh.value == PHONE_YES
    assert zh.outcome is Outcome.PROVISIONAL and zh.step is Step.WEIGHTED_EVIDENCE
    assert zh.strength == 0.42
    assert zh.question is not None and zh.question.purpose == "conflict"
    assert zh.question.text == "您之前提到不考虑手机，这次是帮家人挑选吗？"
    won, lost = zh.claims
    assert (won.source.value, won.score, won.standing) == ("behavior", 0.81, Standing.WON)
    assert (lost.source.value, lost.score, lost.standing) == ("dialogue", 0.42, Standing.LOST)
    assert lost.beaten_by == won.fact_id and "below the winner" in lost.reason
    en = engine.resolve("u1", "commerce", "purchase.intent", language="en")
    assert en.question is not None and "phones" in en.question.text
    assert engine.review_queue() == []


def test_moved_city_change_beats_profile_which_is_flagged_stale(
    engine: Engine, ingest: Ingest
) -> None:
    profile = ingest("location.city", "city:beijing", "profile", 0.95, ago=timedelta(days=200))
    moved = ingest("location.city", "city:shanghai", "dialogue", 0.9, change=True)
    assert moved.status is FactStatus.PENDING_CONFIRMATION  # a `fact` waits for the user
    assert moved.superseded == ()  # and ends nothing that holds until confirmed

    waiting = engine.resolve("u1", "travel", "location.city")
    assert waiting.value == "city:beijing"
    assert [c.standing for c in waiting.claims if c.fact_id == moved.fact_id] == [
        Standing.PENDING]  # fmt: skip

    engine.confirm("u1", moved.fact_id)
    held = engine.resolve("u1", "travel", "location.city")
    assert (held.value, held.outcome, held.step) == (
        "city:shanghai", Outcome.ADOPTED, Step.EXPLICIT_CHANGE,
    )  # fmt: skip
    assert [(s.fact_id, s.why) for s in held.stale] == [(profile.fact_id, "superseded_by_change")]
    old = next(c for c in held.claims if c.fact_id == profile.fact_id)
    assert old.standing is Standing.LOST and old.beaten_by == moved.fact_id
    history = engine.history("u1", "location.city")
    assert [(f.value, f.status) for f in history] == [
        ("city:beijing", FactStatus.SUPERSEDED), ("city:shanghai", FactStatus.ACTIVE),
    ]  # fmt: skip

    # the profile system re-sends its old record: still beaten by the change, still stale
    resent = ingest("location.city", "city:beijing", "profile", 0.95, ago=timedelta(days=200))
    again = engine.resolve("u1", "travel", "location.city")
    assert again.value == "city:shanghai" and again.step is Step.EXPLICIT_CHANGE
    assert resent.fact_id in {s.fact_id for s in again.stale}


def test_two_strong_sources_at_once_freeze_and_queue(engine: Engine, ingest: Ingest) -> None:
    ingest("contact.preference", "email", "profile", 0.9, domain="commerce")
    ingest("contact.preference", "sms", "third_party", 0.9, domain="commerce")

    [review] = engine.review_queue()
    assert (review.key, review.domain, review.strength) == ("contact.preference", "commerce", 0.765)
    frozen = engine.resolve("u1", "commerce", "contact.preference")
    assert frozen.outcome is Outcome.FROZEN and frozen.value is None and not frozen.usable
    assert frozen.review_id == review.review_id
    assert {c.standing for c in frozen.claims} == {Standing.CONTESTED}
    assert len(engine.review_queue()) == 1  # reading again does not queue twice
    listed = engine.resolved_facts("u1", "commerce")
    assert [r.outcome for r in listed if r.key == "contact.preference"] == [Outcome.FROZEN]


def test_review_resolution_unfreezes(engine: Engine, ingest: Ingest, clock: FrozenClock) -> None:
    ingest("contact.preference", "email", "profile", 0.9, domain="commerce")
    ingest("contact.preference", "sms", "third_party", 0.9, domain="commerce")
    [review] = engine.review_queue()
    with pytest.raises(ValidationFailed):
        engine.resolve_review(review.review_id, "pigeon", "called the user", "ana")

    clock.advance(timedelta(minutes=5))
    done = engine.resolve_review(review.review_id, "sms", "user confirmed by phone", "ana")
    assert done.status.value == "resolved" and done.reviewer == "ana"
    assert engine.review_queue() == []
    held = engine.resolve("u1", "commerce", "contact.preference")
    assert (held.value, held.outcome, held.step) == ("sms", Outcome.ADOPTED,
                                                    Step.REVIEW_RESOLUTION)  # fmt: skip
    assert "ana" in held.reason and "user confirmed by phone" in held.reason
    events = engine.store.read_stream("u1")
    resolved = [e for e in events if e.type is EventType.REVIEW_RESOLVED]
    assert resolved[0].payload["reviewer"] == "ana"
    with pytest.raises(InvalidOperation):
        engine.resolve_review(review.review_id, "sms", "again", "ana")

    # weak new evidence competes with the reviewer's value and loses
    clock.advance(timedelta(minutes=5))
    ingest("contact.preference", "phone", "dialogue", 0.2, domain="commerce")
    later = engine.resolve("u1", "commerce", "contact.preference")
    assert later.value == "sms" and later.outcome is Outcome.ADOPTED
    assert later.step is Step.WEIGHTED_EVIDENCE and engine.review_queue() == []


def test_a_settled_change_leaves_what_it_replaced_out_of_a_session_read(
    engine: Engine, clock: FrozenClock
) -> None:
    """A claim replaced by an explicit change whose new value a review then settled: a read
    in a session that holds a claim of its own lists the session claim and the reviewer's
    value, and the replaced claim no more than a read outside the session does (it raised a
    ``KeyError`` looking up the settled change)."""
    airline = {"user_id": "u1", "domain": "travel", "key": "airline.preferred"}
    engine.ingest({**airline, "value": "airline:CA", "source": "dialogue", "scope": "session",
                   "session_id": "s2"})  # fmt: skip
    engine.ingest({**airline, "value": "airline:CA", "source": "behavior"})
    engine.ingest({**airline, "value": "airline:MU", "source": "behavior", "change": True})
    engine.ingest({**airline, "value": "airline:CZ", "source": "dialogue"})  # a conflict
    [review] = engine.review_queue()
    clock.advance(timedelta(minutes=5))
    engine.resolve_review(review.review_id, "airline:CA", "asked the user")
    outside = engine.resolve("u1", "travel", "airline.preferred")
    inside = engine.resolve("u1", "travel", "airline.preferred", session_id="s2")
    assert (outside.value, inside.value) == ("airline:CA", "airline:CA")
    replaced = {f.id for f in engine.history("u1", "airline.preferred", "travel")
                if f.status is FactStatus.SUPERSEDED}  # fmt: skip
    listed = {c.fact_id for c in inside.claims}
    assert replaced and not replaced & listed
    assert not replaced & {c.fact_id for c in outside.claims}
    made = engine.decide("u1", "travel", {"trip_type": "leisure"}, decision="offers",
                         session_id="s2")  # fmt: skip
    assert engine.replay(made.decision_id).reproduced
