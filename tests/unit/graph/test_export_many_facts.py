"""A user with many facts exports in Turtle at a cost that grows with the facts, not their square.

rdflib's Turtle serializer tracks every namespace its IRIs fall into and scans all of them
for each IRI it writes: IRIs that each open a namespace of their own (one per claim) made an
export of n claims cost n² (1,200 claims: seconds). The export's IRIs fall into a fixed set of
namespaces whatever the number of facts, and the Turtle still parses back to the same graph.
"""

from __future__ import annotations

from collections.abc import Callable

from rdflib import Graph, URIRef
from rdflib.compare import isomorphic
from rdflib.namespace import split_uri

from memkg.engine import Engine, IngestResult
from memkg.graph import export

Observe = Callable[..., IngestResult]
CONSENT = {"consent_granted": True}


def _namespaces(graph: Graph) -> set[str]:
    found = set()
    for triple in graph:
        for term in triple:
            if isinstance(term, URIRef):
                found.add(split_uri(term)[0])
    return found


def _export(engine: Engine, user: str, claims: int, observe: Observe) -> tuple[Graph, str]:
    for n in range(claims):  # each session's claim holds beside the others
        observe(user, "health", "medication.current", [f"drug {n} % 50mg/día"], source="profile",
                scope="session", session_id=f"s{n}", provenance=CONSENT)  # fmt: skip
        observe(user, "travel", "airline.avoided", [f"airline:X{n}"], scope="session",
                session_id=f"s{n}")  # fmt: skip
    graph, view = engine.projections.view(user, engine.clock.now(), engine.setup.weights, None)
    return export.to_rdf(graph, view), str(engine.graph(user, fmt="turtle"))


def test_the_namespaces_of_an_export_do_not_grow_with_its_facts(
    engine: Engine, observe: Observe
) -> None:
    few, few_text = _export(engine, "few", 5, observe)
    many, many_text = _export(engine, "many", 60, observe)
    assert len(many) > 10 * len(few) / 2
    assert len(_namespaces(many)) == len(_namespaces(few))
    for graph, text in ((few, few_text), (many, many_text)):
        assert isomorphic(Graph().parse(data=text, format="turtle"), graph)
