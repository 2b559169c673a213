"""Prepared SPARQL cannot be widened by a value; exports carry weights and round-trip."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rdflib import Dataset, Graph
from rdflib.compare import isomorphic

from memkg.engine import Engine, IngestResult
from memkg.events.projection import UserMemory
from memkg.graph import export, sparql
from memkg.graph.projection import UserGraph
from memkg.graph.rdf import graph_iri
from memkg.graph.view import weighted_view
from memkg.model.vocab import user_iri

Observe = Callable[..., IngestResult]
HOSTILE = [
    '" } UNION { ?s ?p ?o } #',
    "> } UNION { GRAPH ?x { ?s ?p ?o } } #",
    str(user_iri("bob")),
    str(graph_iri("bob", "travel")),
    "*",
    "",
]


def _both(engine: Engine, observe: Observe) -> Dataset:
    """One dataset holding alice's and bob's graphs, so only bindings keep them apart."""
    observe("alice", "travel", "airline.preferred", "airline:MU")
    observe("alice", "health", "medical.conditions", ["condition:asthma"],
            provenance={"consent_granted": True})  # fmt: skip
    observe("bob", "travel", "airline.preferred", "airline:CA")
    merged = Dataset()
    for user in ("alice", "bob"):
        for quad in engine.user_graph(user).dataset.quads():
            merged.add(quad)  # type: ignore[arg-type]
    return merged


def test_bound_queries_stay_in_their_user_and_domain(engine: Engine, observe: Observe) -> None:
    merged = _both(engine, observe)
    assert sparql.entities(merged, "alice", "travel", "airline.preferred") == ["airline:MU"]
    assert sparql.entities(merged, "bob", "travel", "airline.preferred") == ["airline:CA"]
    assert sparql.entities(merged, "alice", "health", "airline.preferred") == []
    rows = sparql.facts(merged, "alice", "travel")
    assert [row[1] for row in rows] == ["airline.preferred"]
    assert sparql.knowledge(merged, "condition:asthma")[0][1:] == (
        "protocol:immediate_hospital_visit", 0.92)  # fmt: skip


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_value_cannot_widen_a_query(
    engine: Engine, observe: Observe, hostile: str
) -> None:
    merged = _both(engine, observe)
    bob = {str(user_iri("bob")), "airline:CA", "https://memkg.dev/entity/airline/CA"}
    for found in (
        sparql.entities(merged, "alice", "travel", hostile),
        sparql.entities(merged, hostile, "travel", "airline.preferred"),
        sparql.entities(merged, "alice", hostile, "airline.preferred"),
        [cell for row in sparql.facts(merged, hostile, "travel") for cell in row],
        [cell for row in sparql.facts(merged, "alice", hostile) for cell in row],
    ):
        assert not set(found) & bob
        assert found == []


def test_turtle_export_round_trips(engine: Engine, observe: Observe) -> None:
    _both(engine, observe)
    engine.signal("alice", "travel", "airline.preferred", "airline:MU", "rejected")
    text = engine.graph("alice", "travel", fmt="turtle")
    assert isinstance(text, str)
    graph = engine.user_graph("alice")
    view = weighted_view(graph, engine.clock.now(), engine.config.weights, "travel")
    expected = export.to_rdf(graph, view)
    assert isomorphic(Graph().parse(data=text, format="turtle"), expected)
    assert "0.315" in text
    assert "airline/CA" not in text


def test_json_export_has_weights_breakdowns_and_knowledge(engine: Engine, observe: Observe) -> None:
    _both(engine, observe)
    data = engine.graph("alice")
    assert isinstance(data, dict)
    assert {e["relation"] for e in data["edges"]} == {"airline.preferred", "medical.conditions"}
    assert all(e["breakdown"]["factors"] for e in data["edges"])
    assert {"source": "condition:asthma", "relation": "requires",
            "target": "protocol:immediate_hospital_visit", "weight": 0.92,
            "decidable": True} in data["knowledge"]  # fmt: skip


def test_lazy_and_incremental_datasets_agree(engine: Engine, observe: Observe) -> None:
    observe("alice", "travel", "airline.preferred", "airline:MU")
    live = engine.user_graph("alice")
    live.dataset  # noqa: B018 - built now, then kept current event by event
    fact = observe("alice", "travel", "airline.preferred", "airline:CA", change=True)
    engine.signal("alice", "travel", "airline.preferred", "airline:CA", "mention")
    engine.retract("alice", fact.fact_id, "wrong airline")
    assert engine.user_graph("alice") is live
    fresh = UserGraph.from_events(
        UserMemory("alice"), engine.knowledge, engine.entity_keys, engine.store.read_stream("alice")
    )
    assert set(live.dataset.quads()) == set(fresh.dataset.quads())
