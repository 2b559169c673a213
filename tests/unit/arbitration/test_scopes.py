"""Scope priority, contexts, staleness, corrections and the four write quadrants."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from memkg.arbitration import Outcome, Standing, Step, Tier
from memkg.clock import FrozenClock
from memkg.engine import Engine, IngestResult
from memkg.model.fact import FactStatus, Scope

Ingest = Callable[..., IngestResult]


def test_turn_instruction_beats_global_and_updates_session_notes(
    engine: Engine, ingest: Ingest, clock: FrozenClock
) -> None:
    kept = ingest("seat.preference", "window", "dialogue", 0.9, ago=timedelta(days=30))
    turn = ingest("seat.preference", "aisle", "dialogue", 0.8, scope="turn", session_id="s1",
                  provenance={"source_ref": "turn_3"})  # fmt: skip

    now = engine.resolve("u1", "travel", "seat.preference", session_id="s1", turn="turn_3")
    assert (now.value, now.outcome, now.step) == ("aisle", Outcome.ADOPTED, Step.SCOPE_PRIORITY)
    lost = next(c for c in now.claims if c.fact_id == kept.fact_id)
    assert lost.standing is Standing.LOST and "scope priority" in lost.reason
    assert lost.beaten_by == turn.fact_id

    notes = [f for f in engine.facts("u1", "travel") if f.scope is Scope.SESSION]
    assert [(n.value, n.session_id) for n in notes] == [("aisle", "s1")]
    assert engine.fact("u1", kept.fact_id).status is FactStatus.ACTIVE  # long-term untouched
    later_turn = engine.resolve("u1", "travel", "seat.preference", session_id="s1", turn="t9")
    assert later_turn.value == "aisle"  # from the session notes now
    assert {c.tier for c in later_turn.claims if c.standing is Standing.WON} == {Tier.SESSION}
    assert engine.resolve("u1", "travel", "seat.preference").value == "window"
    assert engine.resolve("u1", "travel", "seat.preference", session_id="s2").value == "window"

    clock.advance(timedelta(minutes=1))
    ingest("seat.preference", "middle", "dialogue", 0.8, scope="turn", session_id="s1",
           provenance={"source_ref": "turn_4"})  # fmt: skip
    notes = [f for f in engine.facts("u1", "travel") if f.scope is Scope.SESSION]
    assert [n.value for n in notes] == ["middle"]  # the newer instruction replaced the note
    assert engine.resolve("u1", "travel", "seat.preference", session_id="s1").value == "middle"


def test_weekday_and_weekend_patterns_are_both_kept(
    engine: Engine, ingest: Ingest, clock: FrozenClock
) -> None:
    # two weeks of browsing: evenings on weekdays, late mornings at the weekend
    for day in range(1, 15):
        date = (clock.now() - timedelta(days=day)).replace(minute=30)
        at = date.replace(hour=11 if date.weekday() >= 5 else 20)
        for product in ("product:iphone_16", "product:mate_70"):
            ingest("product.viewed", product, "behavior", 0.9, domain="commerce",
                   ago=clock.now() - at)  # fmt: skip
    written = engine.derive_patterns("u1", "commerce")
    assert len(written) == 2
    assert engine.derive_patterns("u1", "commerce") == []  # nothing new to say

    found = {
        r.context["day_type"]: r
        for r in engine.resolved_facts("u1", "commerce")
        if r.key == "shopping.hours"
    }
    assert found["weekday"].value == {"from": "20:00", "to": "22:00"}
    assert found["weekend"].value == {"from": "11:00", "to": "13:00"}
    assert {r.outcome for r in found.values()} == {Outcome.ADOPTED}
    facts = [f for f in engine.facts("u1", "commerce") if f.key == "shopping.hours"]
    assert {(f.source.value, f.kind.value) for f in facts} == {("system", "pattern")}


def test_contextual_claims_do_not_contradict(engine: Engine, ingest: Ingest) -> None:
    ingest("seat.preference", "aisle", "dialogue", 0.9, context={"trip_type": "business"})
    ingest("seat.preference", "window", "dialogue", 0.9, context={"trip_type": "leisure"})
    business = engine.resolve("u1", "travel", "seat.preference", context={"trip_type": "business"})
    leisure = engine.resolve("u1", "travel", "seat.preference", context={"trip_type": "leisure"})
    assert (business.value, business.strength) == ("aisle", 0.0)
    assert (leisure.value, leisure.strength) == ("window", 0.0)
    assert engine.review_queue() == []


def test_stale_preference_is_flagged_and_reconfirmed(engine: Engine, ingest: Ingest) -> None:
    old = ingest("airline.preferred", "airline:MU", "dialogue", 0.9, ago=timedelta(days=400))
    found = engine.resolve("u1", "travel", "airline.preferred", language="zh")
    assert found.value == "airline:MU" and found.outcome is Outcome.PROVISIONAL
    assert [(s.fact_id, s.why) for s in found.stale] == [(old.fact_id, "past_horizon")]
    assert found.question is not None and found.question.purpose == "stale"
    assert found.question.text == "东方航空仍然是您首选的航空公司吗？"


def test_correction_and_forgetting(engine: Engine, ingest: Ingest) -> None:
    wrong = ingest("cabin.class", "first", "dialogue", 0.9)
    fixed = ingest("cabin.class", "business", "dialogue", 0.9, supersedes=wrong.fact_id)
    found = engine.resolve("u1", "travel", "cabin.class")
    assert found.value == "business" and found.step is Step.EXPLICIT_CHANGE
    assert found.stale == ()  # the user corrected themselves: nothing is stale
    assert next(c for c in found.claims if c.fact_id == wrong.fact_id).beaten_by == fixed.fact_id

    engine.retract("u1", fixed.fact_id, "user: forget that")
    forgotten = engine.resolve("u1", "travel", "cabin.class")
    assert forgotten.value == "economy"  # back to the role default
    assert (forgotten.outcome, forgotten.step) == (Outcome.DEFAULT, Step.ROLE_DEFAULT)


def test_state_expires_and_is_never_promoted(
    engine: Engine, ingest: Ingest, clock: FrozenClock
) -> None:
    ingest("location.city", "city:beijing", "profile", 0.95)
    ingest("location.current_city", "city:shanghai", "dialogue", 0.9, scope="turn",
           session_id="s1", provenance={"source_ref": "turn_1"})  # fmt: skip
    here = engine.resolve("u1", "travel", "location.current_city", session_id="s1")
    assert here.value == "city:shanghai"

    clock.advance(timedelta(hours=73))
    assert engine.resolve("u1", "travel", "location.current_city", session_id="s1").outcome is (
        Outcome.NO_CLAIMS
    )
    expired = engine.expire_due("u1")
    assert len(expired) == 2  # the turn claim and its session note
    assert engine.resolve("u1", "travel", "location.city").value == "city:beijing"
    history = engine.history("u1", "location.current_city")
    assert [f for f in history if f.scope is Scope.GLOBAL] == []


def test_role_default_until_evidence(engine: Engine, ingest: Ingest) -> None:
    cold = engine.resolve("new", "commerce", "contact.preference")
    assert (cold.value, cold.outcome, cold.step) == ("app", Outcome.DEFAULT, Step.ROLE_DEFAULT)
    ingest("contact.preference", "email", "dialogue", 0.5, domain="commerce", user="new")
    warm = engine.resolve("new", "commerce", "contact.preference")
    assert (warm.value, warm.outcome, warm.step) == ("email", Outcome.ADOPTED, Step.SINGLE_CLAIM)
    nothing = engine.resolve("new", "travel", "location.city")
    assert (nothing.outcome, nothing.step, nothing.value) == (
        Outcome.NO_CLAIMS, Step.NO_EVIDENCE, None,
    )  # fmt: skip


def test_multi_valued_keys_hold_the_union(engine: Engine, ingest: Ingest) -> None:
    consent = {"consent_granted": True, "consent_version": "v1"}
    ingest("diet.restrictions", ["vegetarian"], "dialogue", 0.9, domain="health",
           provenance=consent)  # fmt: skip
    ingest("diet.restrictions", ["vegetarian", "gluten_free"], "third_party", 0.8,
           domain="health", provenance=consent)  # fmt: skip
    found = engine.resolve("u1", "health", "diet.restrictions")
    assert found.multi and found.value == ["gluten_free", "vegetarian"]
    assert found.outcome is Outcome.ADOPTED and found.strength == 0.0
    support = {s.value: s.support for s in found.support}
    assert support == {"vegetarian": 1.31, "gluten_free": 0.68}


def test_signals_on_the_edge_move_the_score(engine: Engine, ingest: Ingest) -> None:
    ingest("airline.preferred", "airline:MU", "dialogue", 0.9)
    before = engine.resolve("u1", "travel", "airline.preferred").claims[0].score
    engine.signal("u1", "travel", "airline.preferred", "airline:MU", "rejected")
    after = engine.resolve("u1", "travel", "airline.preferred").claims[0]
    assert (before, after.score) == (0.63, 0.315)
    assert "rejection" in {f.name for f in after.weight.factors}


def test_a_strong_conflict_within_a_session_asks_instead_of_freezing(
    engine: Engine, ingest: Ingest
) -> None:
    ingest("contact.preference", "email", "profile", 0.9, domain="commerce", scope="session",
           session_id="s1")  # fmt: skip
    ingest("contact.preference", "sms", "third_party", 0.9, domain="commerce", scope="session",
           session_id="s1")  # fmt: skip
    found = engine.resolve("u1", "commerce", "contact.preference", session_id="s1")
    assert found.outcome is Outcome.PROVISIONAL and found.strength == 0.765
    assert found.question is not None and found.question.text == (
        "Should we contact you by email or by sms?"
    )
    assert engine.review_queue() == []
