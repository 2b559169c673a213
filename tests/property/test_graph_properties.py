"""Invariants of the contextual graph, over random histories of facts, signals and time."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import Graph
from rdflib.compare import isomorphic

from memkg.clock import FrozenClock
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.errors import MemkgError
from memkg.events.projection import UserMemory
from memkg.events.store import EventStore
from memkg.graph import export
from memkg.graph.projection import UserGraph
from memkg.graph.view import weighted_view

USERS = ("alice", "bob")
DOMAINS = ("travel", "health", "commerce")
CLAIMS: list[tuple[str, str, Any]] = [
    ("travel", "airline.preferred", "airline:MU"),
    ("travel", "airline.preferred", "airline:CA"),
    ("travel", "seat.preference", "window"),
    ("health", "medical.conditions", ["condition:asthma"]),
    ("health", "medical.conditions", ["condition:asthma", "condition:celiac"]),
    ("commerce", "brand.preferred", "brand:huawei"),
]
PROTOTYPE = Engine(config=EngineConfig(shacl=False))
_SHARED = ("ontology", "registry", "validator", "knowledge", "entity_keys")


def _engine(store: EventStore | None, clock: FrozenClock) -> Engine:
    engine = Engine(store, clock=clock, config=PROTOTYPE.config)
    for name in _SHARED:  # parsed once for the whole module: they are read-only
        engine.setup.__dict__[name] = getattr(PROTOTYPE.setup, name)
    return engine


fact_op = st.tuples(
    st.just("fact"),
    st.sampled_from(USERS),
    st.integers(0, len(CLAIMS) - 1),
    st.sampled_from(["dialogue", "behavior", "profile"]),
    st.floats(0.3, 1.0),
    st.booleans(),
)
signal_op = st.tuples(
    st.just("signal"),
    st.sampled_from(USERS),
    st.integers(0, 20),
    st.sampled_from(["mention", "correction", "ignored", "rejected"]),
)
op = st.one_of(
    fact_op,
    signal_op,
    st.tuples(st.just("retract"), st.sampled_from(USERS), st.integers(0, 20)),
    st.tuples(st.just("confirm"), st.sampled_from(USERS), st.integers(0, 20)),
    st.tuples(st.just("advance"), st.integers(1, 24 * 20)),
)
histories = st.lists(st.one_of(fact_op, op), min_size=3, max_size=16)


def _run(engine: Engine, clock: FrozenClock, history: list[tuple[Any, ...]]) -> None:
    for step in history:
        # refused operations store nothing; the invariants must hold all the same
        with contextlib.suppress(MemkgError):
            _step(engine, clock, step)


def _step(engine: Engine, clock: FrozenClock, step: tuple[Any, ...]) -> None:
    kind, *rest = step
    if kind == "advance":
        clock.advance(timedelta(hours=rest[0]))
        return
    user = rest[0]
    if kind == "fact":
        domain, key, value = CLAIMS[rest[1]]
        engine.ingest({"user_id": user, "domain": domain, "key": key, "value": value,
                       "source": rest[2], "confidence": rest[3], "change": rest[4],
                       "provenance": {"consent_granted": True}})  # fmt: skip
    elif kind == "signal":  # on one of the user's live claims, else it would be refused
        live = engine.memory(user).current(at=clock.now())
        if live:
            fact = live[rest[1] % len(live)]
            value = fact.value[-1] if isinstance(fact.value, list) else fact.value
            engine.signal(user, fact.domain, fact.key, value, rest[2])
    else:
        facts = sorted(engine.memory(user).facts)
        if not facts:
            return
        fact_id = facts[rest[1] % len(facts)]
        if kind == "retract":
            engine.retract(user, fact_id, "property test")
        else:
            engine.confirm(user, fact_id)
    for domain in DOMAINS:  # keep the cached graphs warm: the incremental path is under test
        engine.edges(user, domain)


fast = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


@fast
@given(histories)
def test_weights_rebuilt_from_the_log_equal_live_weights(history: list[tuple[Any, ...]]) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, tzinfo=UTC))
    live = _engine(None, clock)
    _run(live, clock, history)
    rebuilt = _engine(live.store, clock)
    for user in USERS:
        for domain in DOMAINS:
            assert live.edges(user, domain) == rebuilt.edges(user, domain)
        assert live.graph(user) == rebuilt.graph(user)


@fast
@given(histories)
def test_the_graph_as_of_position_n_is_the_graph_of_the_first_n_events(
    history: list[tuple[Any, ...]],
) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, tzinfo=UTC))
    engine = _engine(None, clock)
    for user in USERS:
        engine.user_graph(user).dataset  # noqa: B018 - built early, then kept current
    snapshots: dict[tuple[str, int], set[Any]] = {}
    for step in history:
        with contextlib.suppress(MemkgError):
            _step(engine, clock, step)
        for user in USERS:
            graph = engine.user_graph(user)
            snapshots[user, graph.seq] = set(graph.dataset.quads())
    for (user, seq), quads in snapshots.items():
        events = [e for e in engine.store.read_stream(user) if e.seq <= seq]
        fresh = UserGraph.from_events(UserMemory(user), engine.knowledge, engine.entity_keys,
                                      events)  # fmt: skip
        assert set(fresh.dataset.quads()) == quads
        assert set(engine.user_graph(user, as_of=seq).dataset.quads()) == quads


@fast
@given(histories, st.sampled_from(["airline:MU", "protocol:immediate_hospital_visit",
                                   "country:CN", "allergen:gluten", "brand:huawei"]))  # fmt: skip
def test_no_query_returns_another_users_or_domains_nodes(
    history: list[tuple[Any, ...]], concept: str
) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, tzinfo=UTC))
    engine = _engine(None, clock)
    _run(engine, clock, history)
    for user in USERS:
        facts = engine.memory(user).facts
        for domain in DOMAINS:
            mine = {f for f, fact in facts.items() if fact.domain == domain}
            assert {e.fact_id for e in engine.edges(user, domain)} <= mine
            for path in engine.paths(user, concept, domain=domain):
                assert path.hops[0].source == user
                assert {h.fact_id for h in path.hops} - {None} <= mine
            turtle = engine.graph(user, domain, fmt="turtle")
            assert isinstance(turtle, str)
            other = next(u for u in USERS if u != user)
            assert f"/user/{other}" not in turtle
            assert all(f"fact/{f}" not in turtle for f in set(facts) - mine)


@fast
@given(histories)
def test_turtle_export_round_trips(history: list[tuple[Any, ...]]) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, tzinfo=UTC))
    engine = _engine(None, clock)
    _run(engine, clock, history)
    for user in USERS:
        graph = engine.user_graph(user)
        view = weighted_view(graph, clock.now(), engine.config.weights)
        expected = export.to_rdf(graph, view)
        parsed = Graph().parse(data=export.to_turtle(graph, view), format="turtle")
        assert isomorphic(parsed, expected)
