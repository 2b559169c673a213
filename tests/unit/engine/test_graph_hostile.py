"""Paths and graph reads given hostile or unusual input: a dense ontology, odd depths, odd
domains. Each is refused with a code that says what to change, and nothing is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.errors import InvalidOperation, MemkgError, NotFound
from memkg.graph import queries
from support.observations import T0, obs

PREFIXES = """@prefix mk: <https://memkg.dev/ns#> .
@prefix city: <https://memkg.dev/entity/city/> .
@prefix airline: <https://memkg.dev/entity/airline/> .
"""


def _dense(root: Path, cities: int, airlines: int) -> Engine:
    """An ontology where every city is near every other and near ``city:goal``, and each
    airline has a hub among them: thousands of simple paths of six hops to ``city:goal``."""
    lines = [PREFIXES]
    names = [f"city:c{i}" for i in range(cities)]
    lines += [f"airline:A{k} a mk:Airline ; mk:hub city:c{k % cities} ." for k in range(airlines)]
    lines += [f"{a} mk:near {b} ." for a in names for b in names if a != b]
    lines += [f"{a} mk:near city:goal ." for a in names]
    (root / "ontology" / "domains").mkdir(parents=True)
    (root / "ontology" / "domains" / "dense.ttl").write_text("\n".join(lines), encoding="utf-8")
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(roots=(root,), shacl=False))
    avoided = [f"airline:A{k}" for k in range(airlines)]
    engine.ingest(obs(key="airline.avoided", value=avoided))
    return engine


def test_paths_in_a_dense_ontology_are_refused_not_listed_by_the_hundred_thousand(
    tmp_path: Path,
) -> None:
    engine = _dense(tmp_path, cities=16, airlines=10)
    version = engine.store.stream_version("u1")
    assert len(engine.paths("u1", "city:goal", max_depth=3)) == 10  # airline, hub, goal
    with pytest.raises(InvalidOperation) as caught:
        engine.paths("u1", "city:goal", max_depth=6)
    assert caught.value.code == "graph.too_many_paths"
    assert "city:goal" in caught.value.message and "max_depth" in caught.value.message
    assert engine.store.stream_version("u1") == version


def _clique(size: int) -> dict[str, Any]:
    """A successor map (``View._succ``'s shape): user → hub → goal, and a clique of ``size``
    nodes that all lead back to the hub: every route into the clique is a dead end."""
    clique = [f"c{i}" for i in range(size)]
    succ: dict[str, Any] = {"user": {"hub": {"f1": {}}}, "goal": {}}
    succ["hub"] = {"goal": {"r": {}}, **{c: {"r": {}} for c in clique}}
    for c in clique:
        succ[c] = {"hub": {"r": {}}, **{d: {"r": {}} for d in clique if d != c}}
    return succ


def test_a_walk_through_dead_ends_stops_at_its_budget() -> None:
    succ = _clique(60)  # 60 × 59 × 58 × … dead-end routes of up to six hops
    assert list(queries.routes(succ, "user", "goal", 2)) == [
        [("user", "hub", "f1"), ("hub", "goal", "r")]
    ]
    with pytest.raises(InvalidOperation) as caught:
        list(queries.routes(succ, "user", "goal", 6, max_steps=10_000))
    assert caught.value.code == "graph.too_many_paths"
    assert "max_depth" in caught.value.message


def test_a_walk_skips_what_cannot_reach_the_concept() -> None:
    clique = [f"c{i}" for i in range(60)]
    succ: dict[str, Any] = {"user": {"hub": {"f1": {}}, "c0": {"f2": {}}},
                            "hub": {"goal": {"r": {}}}, "goal": {}}  # fmt: skip
    for c in clique:  # a clique that leads nowhere: hundreds of millions of routes in it
        succ[c] = {d: {"r": {}} for d in clique if d != c}
    only = [[("user", "hub", "f1"), ("hub", "goal", "r")]]
    assert list(queries.routes(succ, "user", "goal", 6, max_steps=100)) == only
    assert list(queries.routes(succ, "user", "goal", 10**9, max_steps=100)) == only
    assert list(queries.routes(succ, "user", "goal", 1)) == []


@pytest.mark.parametrize("depth", ["3", None, True, 2.5, 0, -1, 7, 10**9])
def test_max_depth_is_a_whole_number_from_1_to_6(depth: object) -> None:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    engine.ingest(obs(key="airline.avoided", value=["airline:MU"]))
    with pytest.raises(InvalidOperation) as caught:
        engine.paths("u1", "city:shanghai", max_depth=depth)  # type: ignore[arg-type]
    assert caught.value.code == "argument.type"
    assert "max_depth" in caught.value.message and "1 to 6" in caught.value.message
    assert [len(engine.paths("u1", "city:shanghai", max_depth=d)) for d in range(1, 7)] == [
        0, 1, 1, 1, 1, 1]  # fmt: skip


def test_decidable_only_is_true_or_false() -> None:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    with pytest.raises(InvalidOperation) as caught:
        engine.paths("u1", "city:shanghai", decidable_only="no")  # type: ignore[arg-type]
    assert caught.value.code == "argument.type" and "decidable_only" in caught.value.message
    with pytest.raises(InvalidOperation):
        engine.edges("u1", "travel", decidable_only=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("domain", ["x> y", 'a"b', "a\\b", "a\nb", "trave", "travel/../health"])
def test_graph_reads_of_a_domain_no_schema_declares_say_so(domain: str) -> None:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    engine.ingest(obs(key="airline.avoided", value=["airline:MU"]))
    reads = [
        lambda: engine.graph("u1", domain),
        lambda: engine.graph("u1", domain, fmt="turtle"),
        lambda: engine.edges("u1", domain),
        lambda: engine.paths("u1", "city:shanghai", domain=domain),
        lambda: engine.recent_entities("u1", "city", "s1", domain=domain),
        lambda: engine.holding("u1", T0, domain),
    ]
    for read in reads:
        with pytest.raises(NotFound) as caught:
            read()
        assert caught.value.code == "domain.unknown"
    assert engine.paths("u1", "city:shanghai", domain="travel")  # a declared one still reads


@pytest.mark.parametrize("concept", ["a>b", 'x"y', "a\\b", "a b", "a\nb", "é" * 5_000, "%3E"])
def test_an_odd_concept_is_just_a_concept_no_path_reaches(concept: str) -> None:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    engine.ingest(obs(key="airline.avoided", value=["airline:MU"]))
    assert engine.paths("u1", concept, max_depth=6) == []
    with pytest.raises(MemkgError):
        engine.paths("u1", concept + "\x00")
