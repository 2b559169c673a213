"""A strong conflict among a session's (or a turn's) claims is not frozen for a reviewer (the
user is there: ``resolve`` adopts the best-supported value provisionally and gives the
question to ask), but no decision builds an action on it: the decision is held back, as for
a frozen key, and says what to ask. A moderate conflict there is decided on, with the
question, as anywhere."""

from __future__ import annotations

from datetime import timedelta

from memkg import Engine, FrozenClock

CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "advice"}
PRODUCT = {"product_risk": "aggressive", "product_type": "equity_fund", "amount": 5000}


def _claims(engine: Engine, clock: FrozenClock, user: str, first: tuple[str, float],
            second: tuple[str, float], **scope: str) -> None:  # fmt: skip
    for (source, confidence), value in zip((first, second),
                                           ("risk:conservative", "risk:aggressive"),
                                           strict=True):  # fmt: skip
        engine.ingest({"user_id": user, "domain": "finance", "key": "risk.profile",
                       "value": value, "source": source, "confidence": confidence,
                       "provenance": CONSENT, **scope})  # fmt: skip
        clock.advance(timedelta(seconds=5))


def test_a_strong_conflict_in_a_session_holds_the_decision_back_and_says_what_to_ask(
    engine: Engine, clock: FrozenClock
) -> None:
    _claims(engine, clock, "f2", ("profile", 1.0), ("system", 1.0), scope="session",
            session_id="s1")  # fmt: skip
    read = engine.resolve("f2", "finance", "risk.profile", session_id="s1")
    assert read.outcome.value == "provisional" and read.strength > 0.5 and read.question
    assert engine.review_queue() == []  # nothing for a reviewer: the user is there
    made = engine.decide("f2", "finance", PRODUCT, session_id="s1")
    assert (made.result.status.value, made.result.action) == ("needs_review", None)
    held = [o for o in made.left_out if o.key == "risk.profile"]
    assert held and all(o.reason == "frozen" for o in held)
    assert all(read.question.text in o.detail for o in held)
    [said] = [p for p in made.problems if "risk.profile" in p]
    assert "ask the user first" in said and "reviewer" not in said
    assert engine.replay(made.decision_id).reproduced
    # the user answers in the next turn: the turn's instruction outranks the session's
    # claims, and the key no longer holds the decision back
    engine.ingest({"user_id": "f2", "domain": "finance", "key": "risk.profile",
                   "value": "risk:conservative", "source": "profile", "provenance": CONSENT,
                   "scope": "turn", "session_id": "s1"})  # fmt: skip
    after = engine.decide("f2", "finance", PRODUCT, session_id="s1")
    assert not any(o.reason == "frozen" for o in after.left_out)
    assert (after.result.status.value, after.result.action) != ("needs_review", None)


def test_a_moderate_conflict_in_a_session_is_decided_on_with_its_question(
    engine: Engine, clock: FrozenClock
) -> None:
    _claims(engine, clock, "f4", ("system", 1.0), ("profile", 0.4), scope="session",
            session_id="s1")  # fmt: skip
    read = engine.resolve("f4", "finance", "risk.profile", session_id="s1")
    assert read.outcome.value == "provisional" and 0.2 <= read.strength <= 0.5
    made = engine.decide("f4", "finance", PRODUCT, session_id="s1")
    assert made.result.status.value != "needs_review"


def test_a_decision_recorded_before_the_hold_back_is_made_again_as_it_was(
    engine: Engine, clock: FrozenClock
) -> None:
    """Replay remakes a record as its recorder decided: one logged before a session's strong
    conflict held decisions back (recorder 3) acted on it, and is made again so."""
    _claims(engine, clock, "f2", ("profile", 1.0), ("system", 1.0), scope="session",
            session_id="s1")  # fmt: skip
    made = engine.decide("f2", "finance", PRODUCT, session_id="s1")
    older = made.model_copy(update={"revisions": made.revisions.model_copy(
        update={"recorder": 3})})  # fmt: skip
    graph = engine.projections.graph_as_of("f2", seq=made.as_of_seq)
    again = engine.intent.redecide(engine.intent.rules, older, graph)
    assert again.result.status.value == "decided" and again.result.action
    now = engine.intent.redecide(engine.intent.rules, made, graph)
    assert now.result.status.value == "needs_review"
