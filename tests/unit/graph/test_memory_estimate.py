"""A user's projections estimate their own memory within a factor of what they allocate.

The process memory bound (``EngineConfig.memory_bound``) counts these estimates; here they are
set against ``tracemalloc``'s count of the bytes a projection allocates while it is built.
"""

from __future__ import annotations

import gc
import random
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

import pytest

from memkg import Engine
from memkg.events.projection import UserMemory
from memkg.graph.projection import UserGraph

T = TypeVar("T")
AIRLINES = ["airline:MU", "airline:CA", "airline:CZ", "airline:SQ"]


def _allocated(build: Callable[[], T]) -> tuple[T, int]:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        built = build()
        return built, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def _user(engine: Engine, facts: int, signals: int) -> None:
    rng = random.Random(facts + signals)
    keys = {"airline.preferred": AIRLINES, "seat.preference": ["window", "aisle"],
            "cabin.class": ["economy", "business"]}  # fmt: skip
    for index in range(facts):
        key = list(keys)[index % 3]
        engine.ingest({"user_id": "u1", "domain": "travel", "key": key,
                       "value": rng.choice(keys[key]), "source": rng.choice(["dialogue",
                       "behavior", "profile"]), "confidence": 0.8})  # fmt: skip
    held = [f for f in engine.memory("u1").current() if f.key == "airline.preferred"]
    for index in range(signals):
        engine.signal("u1", "travel", "airline.preferred", held[index % len(held)].value,
                      rng.choice(["mention", "ignored"]))  # fmt: skip


@pytest.mark.parametrize(("facts", "signals"), [(60, 0), (600, 0), (300, 300)])
def test_estimates_are_within_a_factor_of_two_of_what_is_allocated(
    engine: Engine, facts: int, signals: int
) -> None:
    _user(engine, facts, signals)
    events = engine.store.read_stream("u1")
    memory, memory_bytes = _allocated(lambda: UserMemory.from_events("u1", events))

    def graph() -> UserGraph:
        built = engine.setup.new_graph("u1")
        for event in events:
            built.apply(event)
        built.claims_of("travel")
        return built

    user_graph, graph_bytes = _allocated(graph)
    without_rdf = user_graph.estimated_bytes()
    _, rdf_bytes = _allocated(lambda: user_graph.dataset)
    assert 0.5 <= memory.estimated_bytes() / memory_bytes <= 2
    assert 0.5 <= without_rdf / graph_bytes <= 2
    assert 0.5 <= user_graph.estimated_bytes() / (graph_bytes + rdf_bytes) <= 2
