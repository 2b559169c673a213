"""The labelled recall set (``tests/cases/recall/labelled.yaml``): load it, write its memories
into an engine, and measure recall@k and MRR for a ranking (used by the case test and by
``benchmarks/recall_bench.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from memkg import Engine, FrozenClock, RecallWeights

SET = Path(__file__).resolve().parents[1] / "cases" / "recall" / "labelled.yaml"

RANKINGS: dict[str, RecallWeights] = {
    # recall before the semantic index: the share of the query's words and entities
    "lexical": RecallWeights(semantic=0, relevance=0.5),
    # the semantic index alone
    "semantic": RecallWeights(semantic=1, relevance=0, recency=0, type_match=0, confidence=0),
    # the documented default blend: 0.5 semantic + 0.2 recency + 0.15 type + 0.15 confidence
    "hybrid": RecallWeights(),
}


@dataclass(frozen=True)
class Query:
    user: str
    sort: str
    query: str
    expect: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    """One ranking's figures over the set, and each query's rank of its first answer."""

    recall_at_k: float
    mrr: float
    ranks: tuple[int | None, ...]


def load(path: Path = SET) -> tuple[dict[str, list[dict[str, Any]]], list[Query]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    queries = [Query(q["user"], q["sort"], q["query"], tuple(q["expect"])) for q in data["queries"]]
    return data["users"], queries


def write(engine: Engine, clock: FrozenClock, users: Mapping[str, Sequence[dict[str, Any]]]
          ) -> dict[tuple[str, str], str]:  # fmt: skip
    """Store every memory, a day apart; ``{(user, name): fact or note id}``."""
    refs: dict[tuple[str, str], str] = {}
    for user, memories in users.items():
        for memory in memories:
            clock.advance(timedelta(days=1))
            fields = {k: v for k, v in memory.items() if k not in ("name", "note", "consent")}
            consent = {"consent_granted": True, "consent_version": "v1"}
            if "note" in memory:
                saved = engine.save_memory_note(user, memory["domain"], memory["note"], "global",
                                                provenance=consent if memory.get("consent")
                                                else None)  # fmt: skip
                if not saved.saved or saved.id is None:
                    raise ValueError(f"{memory['name']}: note refused: {saved}")
                refs[user, memory["name"]] = saved.id
                continue
            if memory.get("consent"):
                fields["provenance"] = consent
            result = engine.ingest({"user_id": user, **fields})
            refs[user, memory["name"]] = result.fact_id
    return refs


def measure(engine: Engine, queries: Sequence[Query], refs: Mapping[tuple[str, str], str],
            weights: RecallWeights, k: int = 5) -> Scored:  # fmt: skip
    """recall@k (the share of each query's answers among the first ``k`` injected, averaged)
    and MRR (the mean of 1 / rank of the first answer; 0 when none is injected)."""
    recalls, reciprocal, ranks = [], [], []
    for query in queries:
        wanted = {refs[query.user, name] for name in query.expect}
        result = engine.recall(query.user, query.query, k=50, weights=weights)
        ranked = list(result.injected)
        recalls.append(len(wanted & set(ranked[:k])) / len(wanted))
        rank = next((i for i, ref in enumerate(ranked, 1) if ref in wanted), None)
        ranks.append(rank)
        reciprocal.append(1 / rank if rank else 0.0)
    count = len(queries)
    return Scored(sum(recalls) / count, sum(reciprocal) / count, tuple(ranks))
