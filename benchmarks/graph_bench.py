"""Cost of the contextual graph, per user and whole, as the store grows from 1k to 100k facts.

Prints, side by side at 1k and 100k facts in the store: projecting one fact into a user's
graph (RDF dataset kept current), recomputing one user's weights (200 edges) at a new time on
every call (weights decay, so a real clock never asks twice for the same time), the same plus
every edge's breakdown (what a decision's explanation reads), a two-hop path query,
``engine.edges`` on the cached view, and recomputing the whole graph's weights; then the
100k/1k ratios. Per-user costs must stay flat (ratio near 1) however many other users the
store holds.

Setup appends fact events straight through the in-memory event store (no validation, no
SHACL): validation is measured elsewhere and is not what this benchmark is about.
Run: ``python benchmarks/graph_bench.py [--quick] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

try:
    import memkg  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

from memkg.clock import FrozenClock
from memkg.engine import Engine
from memkg.events.memory import MemoryEventStore
from memkg.events.projection import UserMemory
from memkg.graph import queries
from memkg.graph.projection import UserGraph
from memkg.graph.view import weighted_view
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import Fact, FactStatus, Kind, Provenance, Scope, Sensitivity, Source

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
TARGET, TARGET_FACTS, OTHER_FACTS = "target", 200, 100
VALUES = [("travel", "airline.preferred", f"airline:{c}") for c in ("MU", "CA", "CZ", "HO")] + [
    ("travel", "location.city", f"city:{c}") for c in ("shanghai", "beijing", "tokyo")
]


def _fact(clock: FrozenClock, user: str, n: int) -> Fact:
    domain, key, value = VALUES[n % len(VALUES)]
    return Fact(id=clock.new_id("fact"), user_id=user, domain=domain, key=key, value=value,
                kind=Kind.PREFERENCE, source=Source.BEHAVIOR, confidence=0.5 + (n % 5) / 10,
                scope=Scope.GLOBAL, observed_at=NOW - timedelta(days=n % 90), recorded_at=NOW,
                provenance=Provenance(), sensitivity=Sensitivity.PUBLIC,
                status=FactStatus.ACTIVE, schema_version=1)  # fmt: skip


def _event(clock: FrozenClock, fact: Fact) -> NewEvent:
    payload = {"fact": fact.model_dump(mode="json", exclude={"seq", "superseded_by",
                                                             "status_reason"})}  # fmt: skip
    return NewEvent(event_id=clock.new_id("evt"), type=EventType.FACT_ASSERTED,
                    user_id=fact.user_id, domain=fact.domain, payload=payload,
                    recorded_at=NOW, fact_id=fact.id)  # fmt: skip


def _store(total: int, clock: FrozenClock) -> MemoryEventStore:
    store = MemoryEventStore()
    store.append(TARGET, [_event(clock, _fact(clock, TARGET, n)) for n in range(TARGET_FACTS)])
    for u in range((total - TARGET_FACTS) // OTHER_FACTS):
        user = f"user{u:05d}"
        store.append(user, [_event(clock, _fact(clock, user, n)) for n in range(OTHER_FACTS)])
    return store


def _time(fn: Callable[[], object], repeat: int, rounds: int = 5) -> float:
    """Seconds of one call: the median of ``repeat`` calls, best of ``rounds`` rounds.

    The best round rather than all calls pooled, so that other work on a shared machine
    shows up as noise between runs, not as a difference between two rows of one run.
    """
    medians = []
    for _ in range(rounds):
        runs = []
        for _ in range(max(repeat // rounds, 1)):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        medians.append(statistics.median(runs))
    return min(medians)


def measure(total: int) -> dict[str, float]:
    clock = FrozenClock(NOW)
    store = _store(total, clock)
    engine = Engine(store, clock=clock)
    params = engine.config.weights

    def user_graph(user: str) -> UserGraph:
        return UserGraph.from_events(UserMemory(user), engine.knowledge, engine.entity_keys,
                                     store.read_stream(user))  # fmt: skip

    everyone = [user_graph(user) for user in store.users()]
    # long-lived data out of the collector's way, as in a server that has warmed up
    gc.collect()
    gc.freeze()
    target = user_graph(TARGET)
    assert sum(1 for _ in target.claims()) == TARGET_FACTS
    times = (NOW + timedelta(seconds=n) for n in range(1_000_000))
    one_user = _time(lambda: weighted_view(target, next(times), params), 300)
    explained = _time(lambda: queries.edges(weighted_view(target, next(times), params)), 100)
    view = weighted_view(target, NOW, params)
    two_hop = _time(lambda: queries.paths(view, "city:shanghai", max_depth=2), 300)
    read = _time(lambda: engine.edges(TARGET, "travel", "airline.preferred"), 300)

    target.dataset  # noqa: B018 - built once; each new fact is then projected into it
    version = target.version
    new_events = []
    for n in range(200):
        version += 1
        appended = store.append(TARGET, [_event(clock, _fact(clock, TARGET, n))],
                                expected_version=version - 1)  # fmt: skip
        new_events.extend(appended.events)
    pending = iter(new_events)
    project = _time(lambda: target.apply(next(pending)), 200, rounds=1)

    whole = _time(lambda: [weighted_view(g, NOW, params) for g in everyone], 1, rounds=1)
    edges = sum(sum(1 for _ in g.claims()) for g in everyone)
    gc.unfreeze()
    return {"facts": total, "edges": edges, "project_one_fact": project,
            "one_user_weights": one_user, "one_user_explained": explained,
            "whole_graph_weights": whole,
            "two_hop_paths": two_hop, "engine_edges_read": read}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="a quick profile: 1k against 20k facts, not 100k"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args(argv)
    total = 20_000 if args.quick else 100_000
    print(__doc__.splitlines()[0])
    print(
        "setup: fact events appended straight through MemoryEventStore (no validation/SHACL);"
        " gc.freeze() after setup; per call: median of a round, best of 5 rounds"
    )
    small, large = measure(1_000), measure(total)
    rows = [
        ("project one fact into a user's graph", "project_one_fact"),
        ("recompute one user's weights (200 edges)", "one_user_weights"),
        ("  … and build all 200 breakdowns", "one_user_explained"),
        ("two-hop path query (user → airline → city)", "two_hop_paths"),
        ("engine.edges for one user (cached view)", "engine_edges_read"),
        ("recompute the whole graph's weights", "whole_graph_weights"),
    ]
    print(f"{'':46} {'1k facts':>12} {f'{total // 1000}k facts':>12} {'ratio':>7}")
    for label, key in rows:
        a, b = small[key], large[key]
        print(f"{label:46} {a * 1e3:10.3f}ms {b * 1e3:10.3f}ms {b / a:7.2f}")
    print(f"whole graph: {small['edges']:,.0f} and {large['edges']:,.0f} edges; per-user rows "
          "should stay near 1, the whole-graph row grows with the store")  # fmt: skip
    figures = Figures()
    figures.add("graph.one_user_weights", large["one_user_weights"] * 1e3, "ms")
    figures.add("graph.two_hop_paths", large["two_hop_paths"] * 1e3, "ms")
    figures.add(
        "graph.one_user_weights_large_to_small",
        large["one_user_weights"] / small["one_user_weights"],
        "x",
        "per user, flat as the store grows",
    )
    figures.save(args.json)


if __name__ == "__main__":
    main()
