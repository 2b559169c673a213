"""The fast weighted view equals the plain one, over random histories and moving time.

The view keeps each domain's live claims between events (``UserGraph.claims_of``), weighs
claims without building their breakdown, fills NetworkX's dicts directly and walks paths
itself. ``_reference_view`` and ``_reference_paths`` are the plain way: every fact sorted on
every call, ``claim_weight`` for every edge, ``add_node``/``add_edge``, and
``nx.all_simple_edge_paths``. Both must agree on every node, edge, float, breakdown and order.
The paths a decision reads (``WeightedGraphView.paths``, built straight from the view's edges)
equal those made from ``queries.paths`` (``_reference_decision_paths``).
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg.clock import FrozenClock
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.engine.decision_graph import WeightedGraphView
from memkg.errors import MemkgError
from memkg.events.memory import MemoryEventStore
from memkg.events.projection import UserMemory
from memkg.graph import queries
from memkg.graph.projection import UserGraph
from memkg.graph.view import View, breakdown, target_node, user_node, weighted_view
from memkg.model.event import EventType, NewEvent
from memkg.model.evidence import Edge as EvidenceEdge
from memkg.model.evidence import GraphPath as EvidencePath
from memkg.model.evidence import WeightFactor, path_weight
from memkg.model.fact import Fact, FactStatus, Kind, Provenance, Scope, Sensitivity, Source
from memkg.model.weight import ClaimWeight, Signal, WeightParams, claim_weight

START = datetime(2026, 5, 1, tzinfo=UTC)
USERS = ("alice", "bob")
DOMAINS = ("travel", "health", "commerce")
CLAIMS: list[tuple[str, str, Any]] = [
    ("travel", "airline.preferred", "airline:MU"),
    ("travel", "airline.preferred", "airline:CA"),
    ("travel", "location.city", "city:shanghai"),
    ("travel", "seat.preference", "window"),
    ("health", "medical.conditions", ["condition:asthma"]),
    ("health", "medical.conditions", ["condition:asthma", "condition:celiac"]),
    ("commerce", "brand.preferred", "brand:huawei"),
]
CONCEPTS = ("airline:MU", "city:shanghai", "country:CN", "protocol:immediate_hospital_visit",
            "allergen:gluten", "brand:huawei")  # fmt: skip
PROTOTYPE = Engine(config=EngineConfig(shacl=False))
_SHARED = ("ontology", "registry", "validator", "knowledge", "entity_keys")


def _engine(clock: FrozenClock) -> Engine:
    engine = Engine(clock=clock, config=PROTOTYPE.config)
    for name in _SHARED:  # parsed once for the whole module: they are read-only
        engine.setup.__dict__[name] = getattr(PROTOTYPE.setup, name)
    return engine


# -- the plain way ---------------------------------------------------------------------------


def _reference_view(graph: UserGraph, now: datetime, params: WeightParams,
                    domain: str | None) -> View:  # fmt: skip
    view = nx.MultiDiGraph(user_id=graph.user_id, domain=domain, now=now,
                           threshold=params.threshold)  # fmt: skip
    user = user_node(graph.user_id)
    view.add_node(user, kind="user", ref=graph.user_id)
    entities = set()
    for fact, target in graph.claims(domain, now):
        node = target_node(fact.domain, fact.key, target)
        if target.entity:
            entities.add(target.value)
            view.add_node(node, kind="entity", ref=target.value,
                          type=graph.knowledge.entity_type(target.value),
                          label=graph.knowledge.label(target.value))  # fmt: skip
        else:
            view.add_node(node, kind="value", ref=target.value)
        signals = [s.as_signal() for s in graph.signals_for(fact, target)]
        weight = claim_weight(fact.confidence, fact.source.value, fact.observed_at, signals,
                              now, params)  # fmt: skip
        view.add_edge(user, node, key=fact.id, relation=fact.key, domain=fact.domain,
                      fact_id=fact.id, status=fact.status.value, weight=weight.value,
                      breakdown=weight,
                      decidable=weight.usable and fact.status is FactStatus.ACTIVE)  # fmt: skip
    for edge in graph.knowledge.reachable(entities):
        hop = params.knowledge_weight if edge.weight is None else edge.weight
        for ref in (edge.source, edge.target):
            if ref not in view:
                view.add_node(ref, kind="entity", ref=ref,
                              type=graph.knowledge.entity_type(ref),
                              label=graph.knowledge.label(ref))  # fmt: skip
        view.add_edge(edge.source, edge.target, key=edge.relation, relation=edge.relation,
                      domain=None, fact_id=None, status=None, weight=hop, breakdown=None,
                      decidable=hop >= params.threshold)  # fmt: skip
    return view


def _reference_paths(view: View, concept: str, max_depth: int) -> list[queries.GraphPath]:
    user = user_node(view.graph["user_id"])
    if concept not in view or concept == user or max_depth < 1:
        return []
    found = []
    for route in nx.all_simple_edge_paths(view, user, concept, cutoff=max_depth):
        hops = []
        for source, target, key in route:
            data = view.edges[source, target, key]
            hops.append(queries.Hop(
                source=view.nodes[source]["ref"], relation=data["relation"], target=target,
                weight=data["weight"], decidable=data["decidable"], fact_id=data["fact_id"],
                status=data["status"], breakdown=data["breakdown"]))  # fmt: skip
        weight = min(hop.weight for hop in hops)  # a path weighs its weakest hop
        found.append(queries.GraphPath(hops=tuple(hops), weight=weight,
                                       decidable=all(h.decidable for h in hops)))  # fmt: skip
    return sorted(found, key=lambda p: (-p.weight, [(h.relation, h.target) for h in p.hops]))


def _reference_edges(view: View) -> list[queries.Edge]:
    user = user_node(view.graph["user_id"])
    found = [
        queries.Edge(
            user_id=view.graph["user_id"],
            domain=data["domain"],
            relation=data["relation"],
            target=target,
            fact_id=data["fact_id"],
            status=data["status"],
            weight=data["weight"],
            usable=data["breakdown"].usable,
            decidable=data["decidable"],
            breakdown=data["breakdown"],
        )
        for _, target, data in view.out_edges(user, data=True)
    ]
    return sorted(found, key=lambda e: (-e.weight, e.relation, e.target, e.fact_id))


def _reference_decision_paths(
    graph: UserGraph, now: datetime, params: WeightParams, domain: str, to: str,
    via: str | None, of_facts: set[str] | None,
) -> list[EvidencePath]:  # fmt: skip
    """A decision's paths made from ``queries.paths``, hop by hop."""
    user = f"user:{graph.user_id}"
    found = []
    for path in queries.paths(weighted_view(graph, now, params, domain), to, max_depth=3):
        if via is not None and via not in [h.target for h in path.hops[:-1]]:
            continue
        if of_facts is not None and any(
            h.fact_id is not None and h.fact_id not in of_facts for h in path.hops
        ):
            continue
        hops = tuple(_reference_hop(h, user, params.threshold) for h in path.hops)
        weight = path_weight(h.weight for h in hops)
        found.append(EvidencePath(ref="|".join(h.ref for h in hops), to=to, via=via,
                                  weight=weight, hops=hops))  # fmt: skip
    return sorted(found, key=lambda p: p.ref)


def _reference_hop(h: queries.Hop, user: str, threshold: float) -> EvidenceEdge:
    factors = h.breakdown.factors if h.breakdown else ()
    return EvidenceEdge(
        ref=f"{h.fact_id or h.source}>{h.relation}>{h.target}",
        source=user if h.fact_id is not None else h.source,
        relation=h.relation,
        target=h.target,
        weight=h.weight,
        base=h.breakdown.base if h.breakdown else None,
        factors=tuple(
            WeightFactor(name=f.name, value=f.value, detail=f.detail, event_id=f.event_id)
            for f in factors
        ),
        fact_id=h.fact_id,
        usable=h.weight >= threshold,
    )


def _assert_same_view(fast: View, plain: View) -> None:
    assert fast.graph == plain.graph
    assert list(fast.nodes(data=True)) == list(plain.nodes(data=True))
    assert list(fast.pred) == list(plain.pred)
    assert [(u, v, k) for u, v, k in fast.in_edges(keys=True)] == list(
        plain.in_edges(keys=True))  # fmt: skip
    fast_edges = list(fast.edges(keys=True, data=True))
    plain_edges = list(plain.edges(keys=True, data=True))
    assert [e[:3] for e in fast_edges] == [e[:3] for e in plain_edges]
    for (*_, got), (*_, want) in zip(fast_edges, plain_edges, strict=True):
        assert breakdown(got) == want["breakdown"]
        assert {k: v for k, v in got.items() if k != "claim"} == {
            k: v for k, v in want.items() if k != "breakdown"}  # fmt: skip


def _check(graph: UserGraph, now: datetime, params: WeightParams) -> None:
    for domain in (None, *DOMAINS):
        fast, plain = weighted_view(graph, now, params, domain), _reference_view(
            graph, now, params, domain)  # fmt: skip
        _assert_same_view(fast, plain)
        assert queries.edges(fast) == _reference_edges(plain)
        for concept in CONCEPTS:
            for depth in (2, 3):
                assert queries.paths(fast, concept, depth) == _reference_paths(
                    plain, concept, depth)  # fmt: skip
        if domain is None:
            continue
        decided = WeightedGraphView(graph, now, params, domain)
        facts = sorted(f.id for f in graph.memory.facts.values())
        for of_facts in (None, set(facts[::2])):
            for concept in CONCEPTS:
                for via in (None, "city:shanghai", "condition:asthma"):
                    assert decided.paths(concept, via, of_facts) == _reference_decision_paths(
                        graph, now, params, domain, concept, via, of_facts)  # fmt: skip


# -- histories -------------------------------------------------------------------------------

op = st.one_of(
    st.tuples(
        st.just("fact"),
        st.sampled_from(USERS),
        st.integers(0, len(CLAIMS) - 1),
        st.sampled_from(["dialogue", "behavior", "profile"]),
        st.floats(0.3, 1.0),
        st.integers(0, 120),
        st.one_of(st.none(), st.integers(1, 24 * 30)),
        st.booleans(),
    ),
    st.tuples(
        st.just("signal"),
        st.sampled_from(USERS),
        st.integers(0, 20),
        st.sampled_from(["mention", "correction", "ignored", "rejected"]),
    ),
    st.tuples(st.just("retract"), st.sampled_from(USERS), st.integers(0, 20)),
    st.tuples(st.just("confirm"), st.sampled_from(USERS), st.integers(0, 20)),
    st.tuples(st.just("expire"), st.sampled_from(USERS)),
    st.tuples(st.just("advance"), st.integers(1, 24 * 20)),
)


def _step(engine: Engine, clock: FrozenClock, step: tuple[Any, ...]) -> None:
    kind, *rest = step
    if kind == "advance":
        clock.advance(timedelta(hours=rest[0]))
        return
    user = rest[0]
    now = clock.now()
    if kind == "fact":
        domain, key, value = CLAIMS[rest[1]]
        observation = {"user_id": user, "domain": domain, "key": key, "value": value,
                       "source": rest[2], "confidence": rest[3], "change": rest[6],
                       "observed_at": (now - timedelta(days=rest[4])).isoformat(),
                       "provenance": {"consent_granted": True}}  # fmt: skip
        if rest[5] is not None:
            observation["valid_until"] = (now + timedelta(hours=rest[5])).isoformat()
        engine.ingest(observation)
    elif kind == "signal":
        live = engine.memory(user).current(at=now)
        if live:
            fact = live[rest[1] % len(live)]
            value = fact.value[-1] if isinstance(fact.value, list) else fact.value
            engine.signal(user, fact.domain, fact.key, value, rest[2])
    elif kind == "expire":
        engine.expire_due(user)
    else:
        facts = sorted(engine.memory(user).facts)
        if facts:
            fact_id = facts[rest[1] % len(facts)]
            if kind == "retract":
                engine.retract(user, fact_id, "property test")
            else:
                engine.confirm(user, fact_id)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=3, max_size=14), st.integers(-24 * 40, 24 * 40))
def test_kept_claims_and_fast_weights_equal_plain_ones_at_any_time(
    history: list[tuple[Any, ...]], shift_hours: int
) -> None:
    clock = FrozenClock(START)
    engine = _engine(clock)
    params = engine.config.weights
    for step in history:
        with contextlib.suppress(MemkgError):
            _step(engine, clock, step)
        for user in USERS:  # the live graph, its kept claims warm and updated event by event
            graph = engine.user_graph(user)
            _check(graph, clock.now(), params)
            # weights as of another time: signals after it, states expired since, decay
            _check(graph, clock.now() + timedelta(hours=shift_hours), params)
            assert engine.edges(user, "travel") == _reference_edges(
                _reference_view(graph, clock.now(), params, "travel"))  # fmt: skip
    for user in USERS:
        fresh = UserGraph.from_events(UserMemory(user), engine.knowledge, engine.entity_keys,
                                      engine.store.read_stream(user))  # fmt: skip
        for domain in (None, *DOMAINS):
            _assert_same_view(weighted_view(fresh, clock.now(), params, domain),
                              _reference_view(engine.user_graph(user), clock.now(), params,
                                              domain))  # fmt: skip


def test_paths_tied_on_weight_keep_the_order_networkx_walks_them() -> None:
    clock = FrozenClock(START)
    store = MemoryEventStore()
    values = [("travel", "airline.preferred", f"airline:{c}") for c in ("MU", "CA", "CZ")] + [
        ("travel", "location.city", "city:shanghai")]  # fmt: skip
    for n in range(40):  # many parallel, equally weighted claims: order ties everywhere
        domain, key, value = values[n % len(values)]
        fact = Fact(id=clock.new_id("fact"), user_id="alice", domain=domain, key=key,
                    value=value, kind=Kind.PREFERENCE, source=Source.BEHAVIOR,
                    confidence=0.5 + (n % 2) / 10, scope=Scope.GLOBAL, observed_at=START,
                    recorded_at=START, provenance=Provenance(), sensitivity=Sensitivity.PUBLIC,
                    status=FactStatus.ACTIVE, schema_version=1)  # fmt: skip
        payload = {"fact": fact.model_dump(mode="json", exclude={"seq", "superseded_by",
                                                                 "status_reason"})}  # fmt: skip
        store.append("alice", [NewEvent(event_id=clock.new_id("evt"),
                                        type=EventType.FACT_ASSERTED, user_id="alice",
                                        domain=domain, payload=payload, recorded_at=START,
                                        fact_id=fact.id)])  # fmt: skip
    graph = UserGraph.from_events(UserMemory("alice"), PROTOTYPE.knowledge,
                                  PROTOTYPE.entity_keys, store.read_stream("alice"))  # fmt: skip
    params = PROTOTYPE.config.weights
    _check(graph, START + timedelta(days=3), params)
    view = weighted_view(graph, START, params)
    assert len(queries.paths(view, "city:shanghai", 2)) >= 20
    assert len(queries.paths(view, "country:CN", 3)) > 20


signals = st.lists(
    st.builds(
        Signal,
        st.sampled_from(["mention", "correction", "ignored", "rejected", "other"]),
        st.integers(-90 * 86400, 90 * 86400).map(lambda s: START + timedelta(seconds=s)),
        st.text("abc123", min_size=1, max_size=4),
    ),
    max_size=6,
    unique_by=lambda s: s.event_id,
)
params = st.builds(
    WeightParams,
    monthly_decay=st.floats(0, 0.99),
    signal_decay=st.floats(0.01, 1),
    signal_window_days=st.floats(0.5, 60),
    rejection_factor=st.floats(0, 1),
    threshold=st.floats(0, 1),
)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0, 1),
    st.sampled_from(["dialogue", "behavior", "system", "third_party"]),
    st.integers(-400 * 86400, 400 * 86400),
    signals,
    st.one_of(st.just(WeightParams()), params),
)
def test_the_fast_value_is_claim_weight_bit_for_bit(
    confidence: float, source: str, age_seconds: int, found: list[Signal], p: WeightParams
) -> None:
    observed = START - timedelta(seconds=age_seconds)
    fast = ClaimWeight(confidence, source, observed, tuple(found), START, p)
    plain = claim_weight(confidence, source, observed, found, START, p)
    assert (fast.value, fast.usable) == (plain.value, plain.usable)
    assert fast.value.hex() == plain.value.hex()
    assert fast.breakdown == plain


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0, 1),
    st.sampled_from(["dialogue", "behavior", "system"]),
    st.integers(0, 400 * 86400),
    signals,
    signals,
    st.integers(0, 3),
)
def test_weights_that_share_inputs_share_a_breakdown(
    confidence: float, source: str, age_seconds: int, found: list[Signal],
    other: list[Signal], later: int,
) -> None:  # fmt: skip
    """``shares_inputs`` says two claim weights may show one breakdown only when it is so."""
    p = WeightParams()
    observed = START - timedelta(seconds=age_seconds)
    one = ClaimWeight(confidence, source, observed, tuple(found), START, p)
    same = ClaimWeight(confidence, source, observed, tuple(found), START, p)
    assert one.shares_inputs(same) and one.breakdown == same.breakdown
    then = START + timedelta(seconds=later)
    for moved in (
        ClaimWeight(confidence, source, observed, tuple(other), START, p),
        ClaimWeight(confidence, source, observed, tuple(found), then, p),
        ClaimWeight(confidence, source, observed, tuple(found), START, WeightParams()),
    ):
        if one.shares_inputs(moved):
            assert moved.breakdown == one.breakdown
