"""An empty list on a multi-valued key is an explicit "none": it competes, it never breaks."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from memkg.arbitration import Outcome, Standing
from memkg.engine import Engine, IngestResult

Ingest = Callable[..., IngestResult]

CONSENT = {"provenance": {"consent_granted": True, "consent_version": "v1"}}


@pytest.mark.parametrize(
    ("domain", "key", "extra"),
    [
        ("travel", "airline.avoided", {}),
        ("health", "diet.restrictions", CONSENT),
        ("health", "medical.allergies", CONSENT),
        ("commerce", "category.interest", {}),
        ("finance", "product.holding", CONSENT),
    ],
)
def test_an_empty_list_alone_reads_as_none(
    engine: Engine, ingest: Ingest, domain: str, key: str, extra: dict[str, object]
) -> None:
    ingest(key, [], "profile", domain=domain, **extra)
    held = engine.resolve("u1", domain, key)
    assert (held.value, held.outcome) == ([], Outcome.ADOPTED)
    assert [r.value for r in engine.resolved_facts("u1", domain) if r.key == key] == [[]]
    engine.render_profile("u1", domain)
    decision = engine.decide("u1", domain)
    assert decision.result.status.value != "invalid_input"


def test_none_against_values_is_arbitrated_like_any_conflict(
    engine: Engine, ingest: Ingest
) -> None:
    ingest("airline.avoided", ["airline:MU"], "dialogue", 0.9, ago=timedelta(days=1))
    ingest("airline.avoided", [], "profile", 0.3)
    held = engine.resolve("u1", "travel", "airline.avoided")
    # dialogue 0.9 x 0.7 = 0.63 against profile 0.3 x 0.95 = 0.285: the values win, asked
    assert held.value == ["airline:MU"]
    assert held.outcome is Outcome.PROVISIONAL and held.strength == pytest.approx(0.285, abs=1e-3)
    none = next(c for c in held.claims if c.value == [])
    assert none.standing is Standing.LOST


def test_a_strong_none_wins_and_a_strong_conflict_freezes(engine: Engine, ingest: Ingest) -> None:
    ingest("diet.restrictions", ["vegetarian"], "dialogue", 0.3, domain="health", **CONSENT)
    ingest("diet.restrictions", [], "profile", 1.0, domain="health", **CONSENT)
    held = engine.resolve("u1", "health", "diet.restrictions")
    assert held.value == [] and held.outcome is Outcome.PROVISIONAL
    ingest("diet.restrictions", ["vegetarian"], "behavior", 1.0, domain="health", **CONSENT)
    frozen = engine.resolve("u1", "health", "diet.restrictions")
    assert frozen.outcome is Outcome.FROZEN and frozen.value is None
    assert [r.key for r in engine.review_queue()] == ["diet.restrictions"]


def test_values_from_several_sources_still_take_the_union(engine: Engine, ingest: Ingest) -> None:
    ingest("airline.avoided", ["airline:MU"], "dialogue")
    ingest("airline.avoided", ["airline:CA"], "behavior")
    held = engine.resolve("u1", "travel", "airline.avoided")
    assert held.value == ["airline:CA", "airline:MU"] and held.outcome is Outcome.ADOPTED
