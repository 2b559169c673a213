"""Recall quality on the labelled set (recall@5, MRR) for the lexical, semantic and hybrid
rankings side by side, and what the semantic index costs per query.

Quality: the memories and questions of ``tests/cases/recall/labelled.yaml`` (four users, each
question labelled with the memories that answer it, and with its sort: shared words, an
ontology bridge, a named entity, a paraphrase). ``lexical`` is recall before the semantic
index (the share of the query's words and entities, blended with recency, type match and
confidence), ``semantic`` the embedded default index alone (BM25 over FTS5 on memories
expanded with the ontology's labels and synonyms), ``hybrid`` the documented default blend
``0.5·semantic + 0.2·recency + 0.15·type match + 0.15·confidence``. recall@5: the share of a
question's answers among the first five memories injected, averaged; MRR: the mean of 1 / rank
of the first answer (0 when none is injected).

Cost: CPU time per ``Engine.recall`` for a user with N notes, lexical against hybrid (their
ratio is what the semantic index adds), and hybrid at the larger N against the smaller (per
memory it should stay near 1).
``--readme`` rewrites the quality table in README.md (between ``<!-- recall:start -->`` and
``<!-- recall:end -->``) from this run.
Run: ``python benchmarks/recall_bench.py [--quick] [--json FILE] [--readme]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

try:
    import memkg  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

from memkg import Engine, FrozenClock, RecallWeights
from support import recall_set

WORDS = (
    "aisle", "window", "seat", "lounge", "flight", "printer", "ink", "toner", "repair", "phone",
    "budget", "pension", "monthly", "savings", "morning", "clinic", "swimming", "lesson", "bike",
    "trip", "quiet", "airport", "hotel", "breakfast", "coffee", "tea", "museum", "train",
    "ticket", "refund", "invoice",
)  # fmt: skip
QUERIES = ("quiet lounge before the flight", "printer toner repair", "kid's breathing",
           "monthly pension savings", "morning clinic appointment")  # fmt: skip


README = Path(__file__).resolve().parents[1] / "README.md"
NAMES = {
    "lexical": "lexical (recall before the semantic index)",
    "semantic": "semantic (the embedded default alone)",
    "hybrid": "hybrid (the default blend)",
}


def quality(figures: Figures) -> list[str]:
    """Print the table; return it as Markdown rows for the README."""
    users, queries = recall_set.load()
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    with Engine(clock=clock) as engine:
        refs = recall_set.write(engine, clock, users)
        scored = {n: recall_set.measure(engine, queries, refs, w)
                  for n, w in recall_set.RANKINGS.items()}  # fmt: skip
    sorts = sorted({q.sort for q in queries})
    print(f"labelled set: {len(queries)} questions, {len(refs)} memories, {len(users)} users")
    head = "".join(f"{s + f' ({sum(q.sort == s for q in queries)})':>16}" for s in sorts)
    print(f"{'ranking':10} {'recall@5':>9} {'MRR':>7}   found at rank 1-5, by sort:{head}")
    for name, score in scored.items():
        found = ""
        for sort in sorts:
            ranks = [r for r, q in zip(score.ranks, queries, strict=True) if q.sort == sort]
            found += f"{sum(1 for r in ranks if r is not None and r <= 5):>16}"
        print(f"{name:10} {score.recall_at_k:9.3f} {score.mrr:7.3f}{'':30}{found}")
    counts = ", ".join(f"{s} {sum(q.sort == s for q in queries)}" for s in sorts)
    table = [f"| ranking | recall@5 | MRR | found, by sort ({counts}) |", "|---|---|---|---|"]
    for name, score in scored.items():
        figures.add(f"recall.{name}.recall_at_5", score.recall_at_k, "")
        figures.add(f"recall.{name}.mrr", score.mrr, "")
        found = [
            sum(1 for r, q in zip(score.ranks, queries, strict=True)
                if q.sort == s and r is not None and r <= 5)
            for s in sorts
        ]  # fmt: skip
        table.append(f"| {NAMES.get(name, name)} | {score.recall_at_k:.3f} | {score.mrr:.3f} | "
                     f"{', '.join(map(str, found))} |")  # fmt: skip
    return table


def rewrite_readme(table: list[str]) -> None:
    text = README.read_text(encoding="utf-8")
    start, end = "<!-- recall:start -->\n", "<!-- recall:end -->"
    if start not in text or end not in text:
        raise SystemExit(f"{README}: no {start.strip()} ... {end} block to rewrite")
    head, rest = text.split(start, 1)
    README.write_text(head + start + "\n".join(table) + "\n" + end + rest.split(end, 1)[1])
    print(f"rewrote the recall table in {README.name}")


def _cpu_per_query(engine: Engine, user: str, weights: RecallWeights,
                   rounds: int) -> float:  # fmt: skip
    engine.recall(user, QUERIES[0], weights=weights)  # warm: entity index, BM25 background
    start = time.process_time()
    for _ in range(rounds):
        for query in QUERIES:
            engine.recall(user, query, weights=weights)
    return (time.process_time() - start) / (rounds * len(QUERIES))


def cost(figures: Figures, sizes: tuple[int, int], rounds: int) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    per_size: dict[int, dict[str, float]] = {}
    with Engine(clock=clock) as engine:
        for size in sizes:
            user = f"bench-{size}"
            for i in range(size):
                words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(6)]
                text = f"Note {i}: " + " ".join(words)
                engine.save_memory_note(user, "travel", text, "global")
                clock.advance(timedelta(minutes=5))
            per_size[size] = {
                name: _cpu_per_query(engine, user, recall_set.RANKINGS[name], rounds)
                for name in ("lexical", "hybrid")
            }
    small, large = sizes
    for size in sizes:
        lexical, hybrid = per_size[size]["lexical"], per_size[size]["hybrid"]
        print(
            f"{size:>6} notes: recall CPU lexical {lexical * 1e3:7.2f} ms, "
            f"hybrid {hybrid * 1e3:7.2f} ms, hybrid / lexical {hybrid / lexical:5.2f}"
        )
    figures.add(f"recall.hybrid_ms_{large}", per_size[large]["hybrid"] * 1e3, "ms")
    figures.add(
        "recall.hybrid_over_lexical",
        per_size[large]["hybrid"] / per_size[large]["lexical"],
        "x",
        f"CPU per query at {large} notes",
    )
    figures.add(
        "recall.hybrid_per_memory_large_over_small",
        (per_size[large]["hybrid"] / large) / (per_size[small]["hybrid"] / small),
        "x",
        f"{large} against {small} notes; near 1 is linear",
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="a quick profile: 100 and 400 notes, fewer rounds"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument(
        "--readme", action="store_true", help="rewrite the recall table in README.md"
    )
    args = parser.parse_args(argv)
    print(__doc__.splitlines()[0].strip() + " " + __doc__.splitlines()[1].strip())
    figures = Figures()
    table = quality(figures)
    cost(figures, (100, 400) if args.quick else (100, 1_000), 2 if args.quick else 5)
    figures.save(args.json)
    if args.readme:
        rewrite_readme(table)


if __name__ == "__main__":
    main()
