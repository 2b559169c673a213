"""Keys freeze on the writes that create a strong conflict, in the same append; reads never
append anything."""

from __future__ import annotations

from memkg.arbitration import Outcome
from memkg.engine import Engine
from memkg.model.event import EventType

CONSENT = {"provenance": {"consent_granted": True, "consent_version": "v1"}}


def _allergy(engine: Engine, value: list[str], source: str) -> str:
    return engine.ingest({"user_id": "mei", "domain": "health", "key": "medical.allergies",
                          "value": value, "source": source, **CONSENT}).fact_id  # fmt: skip


def _reads(engine: Engine) -> None:
    engine.resolve("mei", "health", "medical.allergies")
    engine.resolved_facts("mei", "health")
    engine.render_profile("mei", "health")
    engine.decide("mei", "health", {"allergen": "allergen:peanut"}, decision="medication")
    engine.facts("mei")


def test_confirm_that_creates_a_strong_conflict_queues_it_at_once(engine: Engine) -> None:
    _allergy(engine, ["allergen:peanut"], "profile")
    pending = _allergy(engine, [], "dialogue")  # a fact from dialogue waits for confirmation
    assert engine.review_queue() == []
    engine.confirm("mei", pending)
    [review] = engine.review_queue()
    assert review.key == "medical.allergies"
    made = engine.decide("mei", "health", {"allergen": "allergen:peanut"}, decision="medication")
    assert made.result.status.value == "needs_review"
    [frozen] = [e for e in engine.read_events("mei") if e.type is EventType.KEY_FROZEN]
    [confirmed] = [e for e in engine.read_events("mei") if e.type is EventType.FACT_CONFIRMED]
    assert frozen.seq == confirmed.seq + 1  # appended together with the write


def test_ingest_queues_a_conflict_on_a_multi_valued_key(engine: Engine) -> None:
    _allergy(engine, ["allergen:peanut"], "profile")
    _allergy(engine, [], "system")
    assert [r.key for r in engine.review_queue()] == ["medical.allergies"]


def test_reads_never_append(engine: Engine) -> None:
    _allergy(engine, ["allergen:peanut"], "profile")
    _allergy(engine, [], "system")
    head = engine.store.head()
    _reads(engine)
    assert engine.store.head() == head
    assert engine.resolve("mei", "health", "medical.allergies").outcome is Outcome.FROZEN


def test_a_signal_that_strengthens_a_dissent_freezes_the_key(engine: Engine) -> None:
    for value, source in (("airline:MU", "profile"), ("airline:CA", "dialogue")):
        engine.ingest({"user_id": "u1", "domain": "travel", "key": "airline.preferred",
                       "value": value, "source": source, "confidence": 0.6})  # fmt: skip
    assert engine.review_queue() == []
    engine.signal("u1", "travel", "airline.preferred", "airline:CA", "mention")
    [review] = engine.review_queue()
    assert review.key == "airline.preferred"
