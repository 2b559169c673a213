"""The labelled recall set: the hybrid ranking recalls at least what the lexical one did.

``tests/cases/recall/labelled.yaml`` holds what four users told an agent and what each
question should bring back; ``support.recall_set`` measures recall@5 and MRR for the lexical
ranking (recall before the semantic index), the semantic index alone and the documented
hybrid blend. ``benchmarks/recall_bench.py`` prints the same figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memkg import Engine, FrozenClock
from support import recall_set
from support.recall_set import RANKINGS, Query, Scored

USERS, QUERIES = recall_set.load()


@pytest.fixture(scope="module")
def measured() -> Iterator[tuple[dict[str, Scored], dict[tuple[str, str], str], Engine]]:
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    with Engine(clock=clock) as engine:
        refs = recall_set.write(engine, clock, USERS)
        scores = {name: recall_set.measure(engine, QUERIES, refs, w)
                  for name, w in RANKINGS.items()}  # fmt: skip
        yield scores, refs, engine


def test_the_set_is_well_formed() -> None:
    names = {(user, m["name"]) for user, memories in USERS.items() for m in memories}
    assert len(names) == sum(len(m) for m in USERS.values())  # names are unique per user
    assert all((q.user, name) in names for q in QUERIES for name in q.expect)
    assert {q.sort for q in QUERIES} == {"words", "bridge", "entity", "paraphrase"}


def test_hybrid_recalls_at_least_what_lexical_did(
    measured: tuple[dict[str, Scored], dict[tuple[str, str], str], Engine],
) -> None:
    scores, _, _ = measured
    lexical, hybrid = scores["lexical"], scores["hybrid"]
    assert hybrid.recall_at_k >= lexical.recall_at_k and hybrid.mrr >= lexical.mrr
    assert hybrid.recall_at_k > lexical.recall_at_k  # the bridges are the difference
    for index, query in enumerate(QUERIES):  # query by query, nothing lexical found is lost
        if lexical.ranks[index] is not None:
            assert hybrid.ranks[index] is not None, query.query


def _by_sort(scores: Scored, sort: str) -> list[int | None]:
    return [rank for rank, q in zip(scores.ranks, QUERIES, strict=True) if q.sort == sort]


def test_the_ontology_bridges_what_words_miss(
    measured: tuple[dict[str, Scored], dict[tuple[str, str], str], Engine],
) -> None:
    scores, _, _ = measured
    bridges = _by_sort(scores["hybrid"], "bridge")
    assert bridges and all(rank == 1 for rank in bridges)
    assert _by_sort(scores["lexical"], "bridge").count(None) >= len(bridges) // 2


def test_entity_validation_keeps_the_other_brand_out(
    measured: tuple[dict[str, Scored], dict[tuple[str, str], str], Engine],
) -> None:
    _, refs, engine = measured
    hp = engine.recall("wang", "the HP LaserJet 1020 repair", k=5)
    assert hp.injected[0] == refs["wang", "hp_note"]
    for name in ("canon_note", "viewed_canon"):
        assert refs["wang", name] not in hp.injected


def test_the_trace_explains_every_ranking(
    measured: tuple[dict[str, Scored], dict[tuple[str, str], str], Engine],
) -> None:
    """Each ranking is the documented sum of the components every candidate carries."""
    _, _, engine = measured
    query: Query = QUERIES[0]
    for weights in RANKINGS.values():
        result = engine.recall(query.user, query.query, k=5, weights=weights)
        for c in result.candidates:
            s = c.scores
            total = (weights.semantic * s.semantic + weights.relevance * s.relevance
                     + weights.recency * s.recency + weights.type_match * s.type_match
                     + weights.confidence * s.confidence)  # fmt: skip
            assert s.total == pytest.approx(total, abs=1e-3)
