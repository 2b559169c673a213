"""Export one user's graph: JSON with every weight and its breakdown, or Turtle.

The Turtle holds the user's named graph(s) as projected, plus one ``rdf:Statement`` per
weighted claim (``user ─key→ target``, ``mk:factId``, ``mk:weight`` as of the view's time);
parsing it back gives a graph isomorphic to ``to_rdf``'s.

A statement's IRI is ``edge:<fact id>.<digest of the target>``: every statement in one
namespace. rdflib's Turtle serializer scans every namespace its IRIs fall into for each IRI it
writes, so an IRI per claim that opened a namespace of its own (the target in the path) made
an export cost the square of the user's claims.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from typing import Any

from rdflib import RDF, Graph, Literal, URIRef
from rdflib.term import Node

from memkg.graph import queries
from memkg.graph.projection import UserGraph
from memkg.graph.rdf import decimal
from memkg.graph.view import View, user_node
from memkg.model.vocab import EDGE, ENTITY_REF, KEY, MK, entity_iri, user_iri


def to_json(
    graph: UserGraph, view: View, frozen: Collection[tuple[str, str]] = ()
) -> dict[str, Any]:
    """The user's graph as data; ``frozen``: the keys a review holds (``queries.edges``)."""
    user = user_node(graph.user_id)
    knowledge = [
        {"source": source, "relation": data["relation"], "target": target,
         "weight": data["weight"], "decidable": data["decidable"]}
        for source, target, data in sorted(view.edges(data=True), key=lambda e: (e[0], e[1]))
        if source != user
    ]  # fmt: skip
    return {
        "user_id": graph.user_id,
        "domain": view.graph["domain"],
        "at": view.graph["now"].isoformat(),
        "version": graph.version,
        "seq": graph.seq,
        "threshold": view.graph["threshold"],
        "edges": [e.model_dump(mode="json") for e in queries.edges(view, frozen=frozen)],
        "knowledge": knowledge,
    }


def to_rdf(graph: UserGraph, view: View) -> Graph:
    """The user's graph of the view's domain (all domains when None) with claim weights."""
    found = graph.graph(view.graph["domain"])
    found.bind("mk", MK)
    found.bind("key", KEY)
    for edge in queries.edges(view):
        statement = _statement(edge.fact_id, edge.target)
        target: Node
        if ENTITY_REF.match(edge.target):
            target = entity_iri(edge.target)
        else:
            target = Literal(edge.target.partition("=")[2])
        found.add((statement, RDF.type, RDF.Statement))
        found.add((statement, RDF.subject, user_iri(graph.user_id)))
        found.add((statement, RDF.predicate, KEY[edge.relation]))
        found.add((statement, RDF.object, target))
        found.add((statement, MK.factId, Literal(edge.fact_id)))
        found.add((statement, MK.weight, decimal(round(edge.weight, 6))))
    return found


def _statement(fact_id: str, target: str) -> URIRef:
    """The IRI of the claim ``fact_id`` makes about ``target`` (a fact names several targets)."""
    digest = hashlib.sha256(target.encode("utf-8")).hexdigest()[:32]
    return EDGE[f"{_local_name(fact_id)}.{digest}"]


def _local_name(fact_id: str) -> str:
    """``fact_id`` as the start of a local name: its characters outside ``[A-Za-z0-9_-]`` as
    ``.xx`` hex escapes (an engine's ids have none), so that the name stays one segment."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else
                   "".join(f".{b:02x}" for b in c.encode("utf-8")) for c in fact_id)  # fmt: skip


def to_turtle(graph: UserGraph, view: View) -> str:
    return to_rdf(graph, view).serialize(format="turtle")
