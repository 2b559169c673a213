"""Recall: a documented blend of scores, a full trace, and entity validation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memkg import Engine, EngineConfig, FrozenClock, LifecycleConfig, RecallWeights

USER = "u1"


@pytest.fixture
def shop(plain: Engine, clock: FrozenClock) -> Engine:
    for text in (
        "Canon PIXMA G3010 inkjet needs new ink cartridges",
        "HP LaserJet 1020 has a paper jam, repair booked for Friday",
    ):
        assert plain.save_memory_note(USER, "commerce", text, "global").saved
        clock.advance(timedelta(days=1))
    plain.ingest(
        {
            "user_id": USER,
            "domain": "commerce",
            "key": "product.viewed",
            "value": "product:canon_pixma_g3010",
            "source": "behavior",
            "confidence": 0.9,
        }
    )
    plain.ingest(
        {
            "user_id": USER,
            "domain": "commerce",
            "key": "category.interest",
            "value": ["category:printer"],
            "source": "behavior",
            "confidence": 0.8,
        }
    )
    return plain


def test_entity_validation_keeps_other_brands_out(shop: Engine) -> None:
    result = shop.recall(USER, "the HP LaserJet 1020 repair", k=3)
    assert result.query_entities[0] == "product:hp_laserjet_1020"
    by_text = {c.text.split(" ")[0]: c for c in result.candidates}
    hp, canon = by_text["HP"], by_text["Canon"]
    assert hp.injected and hp.rejected is None and result.injected[0] == hp.ref
    assert not canon.injected and canon.rejected is not None
    assert "brand:canon" in canon.rejected and "brand:hp" in canon.rejected
    viewed = next(c for c in result.candidates if "product:canon_pixma_g3010" in c.entities)
    assert not viewed.injected and "product:canon_pixma_g3010" in (viewed.rejected or "")
    assert "Canon" not in result.text() and '"HP LaserJet 1020 has a paper jam' in result.text()


def test_trace_has_each_component_and_the_documented_total(shop: Engine) -> None:
    result = shop.recall(USER, "which printer do I usually prefer?", k=5)
    weights = result.weights
    assert result.candidates and result.semantic_index == "bm25"
    assert (weights.semantic, weights.recency, weights.type_match, weights.confidence) == (
        0.5, 0.2, 0.15, 0.15,
    )  # fmt: skip
    for candidate in result.candidates:
        s = candidate.scores
        parts = (s.semantic, s.relevance, s.recency, s.type_match, s.confidence)
        assert all(0.0 <= v <= 1.0 for v in parts)
        blend = (
            weights.semantic * s.semantic
            + weights.relevance * s.relevance
            + weights.recency * s.recency
            + weights.type_match * s.type_match
            + weights.confidence * s.confidence
        )
        assert s.total == pytest.approx(blend, abs=1e-3)
    totals = [c.scores.total for c in result.candidates]
    assert totals == sorted(totals, reverse=True)
    interest = next(c for c in result.candidates if c.kind == "preference")
    assert interest.scores.type_match == 1.0 and interest.injected  # a printer preference


def test_irrelevant_memories_are_not_injected(shop: Engine) -> None:
    result = shop.recall(USER, "flights to Tokyo", k=5)
    assert result.injected == () and len(result.candidates) == 4


def test_weights_come_from_configuration(clock: FrozenClock) -> None:
    recency_only = RecallWeights(
        semantic=0, relevance=0, recency=1, type_match=0, confidence=0, min_relevance=0
    )
    config = EngineConfig(lifecycle=LifecycleConfig(recall=recency_only))
    with Engine(clock=clock, config=config) as engine:
        old = engine.save_memory_note(USER, "travel", "Prefers aisle seats", "global")
        clock.advance(timedelta(days=60))
        new = engine.save_memory_note(USER, "travel", "Likes museums", "global")
        result = engine.recall(USER, "aisle seats", k=1)
    assert result.injected == (new.id,)
    assert [c.ref for c in result.candidates] == [new.id, old.id]
    assert result.candidates[1].scores.recency == pytest.approx(0.25, abs=1e-3)


def test_the_semantic_default_bridges_words_the_ontology_knows(
    plain: Engine, clock: FrozenClock
) -> None:
    """No word of the query is in the stored fact: the ontology's synonyms of asthma are."""
    plain.ingest(
        {"user_id": USER, "domain": "health", "key": "medical.conditions",
         "value": ["condition:asthma"], "source": "profile", "confidence": 0.95,
         "provenance": {"consent_granted": True, "consent_version": "v1"}}
    )  # fmt: skip
    plain.ingest(
        {"user_id": USER, "domain": "health", "key": "child.age", "value": 4,
         "source": "dialogue", "confidence": 0.9}
    )  # fmt: skip
    assert plain.save_memory_note(USER, "health", "Likes morning appointments", "global",
                                  provenance={"consent_granted": True}).saved  # fmt: skip
    query = "the thing I said about my kid's breathing"
    hybrid = plain.recall(USER, query, k=5)
    lexical = plain.recall(USER, query, k=5, weights=RecallWeights(semantic=0, relevance=0.5))
    asthma = next(c for c in hybrid.candidates if "condition:asthma" in c.entities)
    assert hybrid.injected[0] == asthma.ref
    assert asthma.scores.semantic == 1.0 and asthma.scores.relevance == 0.0
    assert asthma.ref not in lexical.injected  # words alone find nothing
    note = next(c for c in hybrid.candidates if c.kind == "note")
    assert note.scores.semantic == 0.0 and note.ref not in hybrid.injected


def test_entity_validation_holds_whatever_the_semantic_score(shop: Engine) -> None:
    result = shop.recall(USER, "HP LaserJet 1020 printer ink", k=5)
    canon = next(c for c in result.candidates if c.text.startswith("Canon"))
    assert canon.scores.semantic > 0 and canon.rejected and not canon.injected


def _seat(engine: Engine, value: str, **fields: object) -> None:
    engine.ingest({"user_id": USER, "domain": "travel", "key": "seat.preference",
                   "value": value, "source": "dialogue", "confidence": 0.9, **fields})  # fmt: skip


def _recalled(engine: Engine, **scope: str) -> set[str]:
    """The seat values and note texts a recall of the seat ranks (injected or not)."""
    result = engine.recall(USER, "which seat does she want", k=10, domain="travel", **scope)
    return {c.text for c in result.candidates}


def test_a_session_recalls_its_own_notes_and_long_term_memory_only(engine: Engine) -> None:
    """A session note counts only in its session and a turn instruction only in its turn, as
    for ``resolve``: recall elsewhere never ranks them (one session's "window, just this
    once" surfaced in every later session's prompt)."""
    _seat(engine, "aisle", source="profile")
    _seat(engine, "window", scope="session", session_id="s1")
    _seat(engine, "middle", scope="turn", session_id="s2", provenance={"source_ref": "t1"})
    assert engine.save_memory_note(USER, "travel", "Flies to Lyon on business",
                                   "session", session_id="s1").saved  # fmt: skip

    def seats(**scope: str) -> set[str]:
        return {t.split(":")[-1].strip(' "') for t in _recalled(engine, **scope) if "seat" in t}

    assert seats() == {"aisle"}
    assert seats(session_id="s1") == {"aisle", "window"}
    # the turn instruction is not recalled itself: the session note it left stands for it
    s2 = engine.recall(USER, "which seat", k=10, domain="travel", session_id="s2")
    [note] = [f.id for f in engine.facts(USER, "travel")
              if f.value == "middle" and f.scope.value == "session"]  # fmt: skip
    assert [c.ref for c in s2.candidates if "middle" in c.text] == [note]
    assert seats(session_id="s3") == {"aisle"}
    assert not any("Lyon" in t for t in _recalled(engine, session_id="s3"))
    assert any("Lyon" in t for t in _recalled(engine, session_id="s1"))
    # the trace says which session recalled
    found = engine.recall(USER, "seat", domain="travel", session_id="s1")
    assert engine.trace(found.trace_id).request["session_id"] == "s1"


def test_what_recall_ranks_does_not_grow_with_other_sessions(engine: Engine) -> None:
    """Each session's note of the seat stays live until its session is consolidated: recall
    in a new session ranks the long-term claim alone, beside 3 sessions or 60."""
    _seat(engine, "aisle", source="profile")
    counts = []
    for sessions in (3, 60):
        for n in range(len(counts) and 3, sessions):
            _seat(engine, "window", scope="session", session_id=f"s{n}")
        counts.append(len(engine.recall(USER, "seat", domain="travel",
                                        session_id="fresh").candidates))  # fmt: skip
    assert counts == [1, 1]


def test_a_recall_trace_says_why_a_memory_was_kept_out_without_its_values(shop: Engine) -> None:
    """The answer names the entities that clashed (the caller's own memory); the trace kept
    for a week says only which kind of entity did: a trace holds no memory values."""
    result = shop.recall(USER, "the HP LaserJet 1020 repair", k=3)
    assert any(c.rejected and "brand:canon" in c.rejected for c in result.candidates)
    trace = shop.trace(result.trace_id or "")
    stored = trace.model_dump_json()
    for value in ("canon", "hp_laserjet", "pixma", "brand:", "product:"):
        assert value not in stored, value
    reasons = {item.reason for item in trace.items if item.reason}
    assert "names another product and another brand than the query" in reasons, reasons


def test_recall_says_what_decisions_do_not_use_yet(plain: Engine, clock: FrozenClock) -> None:
    """An unconfirmed fact is recalled saying so (an allergy said in passing matters); both
    sides of a slot frozen for review are not injected (the profile says to assume none of
    them). Confirmed, or settled, they are recalled as any fact."""
    city = {"user_id": "p", "domain": "travel", "key": "location.city", "value": "city:shanghai",
            "source": "dialogue"}  # fmt: skip
    pending = plain.ingest(city)
    assert plain.resolve("p", "travel", "location.city").value is None
    asked = "where do I live, Shanghai?"
    [said] = [c for c in plain.recall("p", asked).candidates if "shanghai" in c.text]
    assert said.injected and said.standing == "pending" and "not yet confirmed" in said.text
    plain.confirm("p", pending.fact_id)
    [said] = [c for c in plain.recall("p", asked).candidates if "shanghai" in c.text]
    assert said.injected and said.standing is None and "confirmed" not in said.text

    consent = {"consent_granted": True}
    for value, source in (("risk:conservative", "profile"), ("risk:aggressive", "system")):
        plain.ingest({"user_id": "f", "domain": "finance", "key": "risk.profile", "value": value,
                      "source": source, "provenance": consent})  # fmt: skip
        clock.advance(timedelta(seconds=5))
    assert plain.resolve("f", "finance", "risk.profile").outcome.value == "frozen"
    asked = "what is my risk profile? aggressive or conservative?"
    found = [c for c in plain.recall("f", asked).candidates if "risk" in c.text]
    assert len(found) == 2 and not any(c.injected for c in found)
    assert all(c.standing == "contested" and "under human review" in (c.rejected or "")
               for c in found)  # fmt: skip
    traced = plain.trace(plain.recall("f", asked).trace_id or "")
    assert {i.reason for i in traced.items if i.ref in {c.ref for c in found}} == {
        "its key is frozen for review: conflicting claims"}  # fmt: skip
    [review] = plain.review_queue()
    plain.resolve_review(review.review_id, "risk:conservative", "asked the client", reviewer="ops")
    shown = [c for c in plain.recall("f", asked).candidates if "conservative" in c.text]
    assert shown and shown[0].injected and shown[0].standing is None
