"""SPARQL over a user's dataset: prepared once, run with bound parameters only.

No query text is ever built from a value: every query below is parsed once at import (rdflib
spends most of a small query parsing it) and every value arrives through ``initBindings`` as
an RDF term. The user and domain select the named graph (``?g``) and the subject (``?user``);
a hostile value such as ``" } UNION { ?s ?p ?o } #`` is just a literal that matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from rdflib import RDF, RDFS, Dataset, Literal
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.processor import SPARQLProcessor
from rdflib.plugins.sparql.sparql import Query
from rdflib.term import Identifier

from memkg.graph.rdf import KNOWLEDGE_GRAPH, graph_iri
from memkg.model.vocab import MK, entity_iri, entity_ref, user_iri

_NS = {"mk": MK, "rdf": RDF, "rdfs": RDFS}

FACTS = prepareQuery(
    """
    SELECT ?fact ?key ?status ?object ?literal WHERE {
      GRAPH ?g {
        ?fact a mk:Fact ; mk:subject ?user ; mk:key ?key ; mk:status ?status .
        OPTIONAL { ?fact mk:object ?object }
        OPTIONAL { ?fact mk:literalValue ?literal }
      }
    } ORDER BY ?fact ?object
    """,
    initNs=_NS,
)

ENTITIES = prepareQuery(
    """
    SELECT DISTINCT ?entity WHERE {
      GRAPH ?g {
        ?fact mk:subject ?user ; mk:key ?key ; mk:object ?entity ; mk:status ?status .
        FILTER (?status IN (mk:active, mk:pending_confirmation, mk:frozen))
      }
    } ORDER BY ?entity
    """,
    initNs=_NS,
)

KNOWLEDGE = prepareQuery(
    """
    SELECT ?relation ?target ?weight WHERE {
      GRAPH ?k {
        ?entity ?relation ?target .
        FILTER (isIRI(?target) && ?relation != rdf:type)
        OPTIONAL { ?statement rdf:subject ?entity ; rdf:predicate ?relation ;
                              rdf:object ?target ; mk:weight ?weight }
      }
    } ORDER BY ?relation ?target
    """,
    initNs=_NS,
)


def _run(
    dataset: Dataset, query: Query, bindings: Mapping[str, Identifier]
) -> list[tuple[str, ...]]:
    # Dataset.query reads rdflib 7.6's own deprecated default_context; its processor does not
    result = SPARQLProcessor(dataset).query(query, initBindings=bindings)  # type: ignore[no-untyped-call]
    names = result["vars_"]
    return [tuple(str(row.get(n) or "") for n in names) for row in result["bindings"]]


def facts(dataset: Dataset, user_id: str, domain: str) -> list[tuple[str, ...]]:
    """(fact IRI, key, status IRI, object IRI or "", literal JSON or "") per fact and object."""
    bindings = {"g": graph_iri(user_id, domain), "user": user_iri(user_id)}
    return _run(dataset, FACTS, bindings)


def entities(dataset: Dataset, user_id: str, domain: str, key: str) -> list[str]:
    """Entity references the user's live claims of ``key`` name."""
    bindings = {"g": graph_iri(user_id, domain), "user": user_iri(user_id), "key": Literal(key)}
    found = (entity_ref(row[0]) for row in _run(dataset, ENTITIES, bindings))
    return [ref for ref in found if ref is not None]


def knowledge(dataset: Dataset, ref: str) -> list[tuple[str, str, float | None]]:
    """(relation IRI, target reference, stated weight) of the knowledge edges from ``ref``."""
    bindings = {"k": KNOWLEDGE_GRAPH, "entity": entity_iri(ref)}
    found = []
    for relation, target, weight in _run(dataset, KNOWLEDGE, bindings):
        target_ref = entity_ref(target)
        if target_ref is not None:
            found.append((relation, target_ref, float(weight) if weight else None))
    return found
