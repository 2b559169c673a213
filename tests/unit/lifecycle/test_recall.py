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
    assert result.candidates
    for candidate in result.candidates:
        s = candidate.scores
        assert all(0.0 <= v <= 1.0 for v in (s.relevance, s.recency, s.type_match, s.confidence))
        blend = (
            weights.relevance * s.relevance
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
        relevance=0, recency=1, type_match=0, confidence=0, min_relevance=0
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
