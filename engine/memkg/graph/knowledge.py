"""The shared domain knowledge (``ontology/domains``), indexed for graph walks.

A knowledge edge is a triple between two entities (``condition:asthma mk:requires
protocol:immediate_hospital_visit``). Its weight is the ``mk:weight`` of the ``rdf:Statement``
that reifies it; an edge without one (``mk:hub``, ``mk:locatedIn``) is definitional: its weight
is None here and ``WeightParams.knowledge_weight`` in the weighted view.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from rdflib import RDF, RDFS, Graph, Literal, URIRef
from rdflib.term import Node

from memkg.model.vocab import ENTITY, MK, entity_iri, entity_ref

_ENTITY = str(ENTITY)
_REACH_MEMO = 4096
"""Entity sets whose reach is remembered; past that the memo starts over."""


@dataclass(frozen=True)
class KnowledgeEdge:
    source: str
    """Entity reference (``condition:asthma``)."""
    relation: str
    """Local name of the predicate (``requires``)."""
    target: str
    weight: float | None
    """The ``mk:weight`` the knowledge states for the edge, if any."""


class Knowledge:
    """Entities, their types and labels, and the weighted edges between them."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        stated: dict[tuple[Node, Node, Node], float] = {}
        for statement in graph.subjects(RDF.type, RDF.Statement):
            weight = graph.value(statement, MK.weight)
            s = graph.value(statement, RDF.subject)
            p = graph.value(statement, RDF.predicate)
            o = graph.value(statement, RDF.object)
            if isinstance(weight, Literal) and s is not None and p is not None and o is not None:
                stated[s, p, o] = float(weight.toPython())
        self._out: dict[str, list[KnowledgeEdge]] = {}
        for s, p, o in graph:
            if p == RDF.type or not (_is_entity(s) and _is_entity(o)):
                continue
            source, target = entity_ref(str(s)), entity_ref(str(o))
            assert source is not None and target is not None
            self._out.setdefault(source, []).append(
                KnowledgeEdge(
                    source=source,
                    relation=str(p).rpartition("#")[2].rpartition("/")[2],
                    target=target,
                    weight=stated.get((s, p, o)),
                )
            )
        self._types: dict[str, str] = {}
        for node, cls in sorted(graph.subject_objects(RDF.type)):
            ref = entity_ref(str(node)) if _is_entity(node) else None
            if ref is not None and ref not in self._types:
                self._types[ref] = str(cls).rpartition("#")[2]
        self._labels: dict[str, str] = {}
        for node, label in sorted(graph.subject_objects(RDFS.label)):
            ref = entity_ref(str(node)) if _is_entity(node) else None
            if ref is None or not isinstance(label, Literal):
                continue
            if label.language == "en" or ref not in self._labels:
                self._labels[ref] = str(label)
        for edges in self._out.values():
            edges.sort(key=lambda e: (e.relation, e.target))
        self._reach: dict[frozenset[str], tuple[KnowledgeEdge, ...]] = {}

    def out(self, ref: str) -> list[KnowledgeEdge]:
        return self._out.get(ref, [])

    def reachable(self, refs: Iterable[str]) -> list[KnowledgeEdge]:
        """Every knowledge edge reachable from ``refs``, each once, in walk order."""
        seen, found = set(refs), []
        frontier = sorted(seen)
        while frontier:
            following = []
            for ref in frontier:
                for edge in self.out(ref):
                    found.append(edge)
                    if edge.target not in seen:
                        seen.add(edge.target)
                        following.append(edge.target)
            frontier = following
        return found

    def reach(self, refs: Iterable[str]) -> tuple[KnowledgeEdge, ...]:
        """``reachable(refs)``, remembered: entity sets repeat and the knowledge never changes."""
        key = frozenset(refs)
        found = self._reach.get(key)
        if found is None:
            found = tuple(self.reachable(key))
            if len(self._reach) >= _REACH_MEMO:
                self._reach.clear()
            self._reach[key] = found
        return found

    def entity_type(self, ref: str) -> str | None:
        """The class local name (``Airline``) the knowledge gives the entity."""
        return self._types.get(ref)

    def label(self, ref: str) -> str | None:
        """The English label, else any label."""
        return self._labels.get(ref)

    def describe(self, ref: str) -> Iterator[tuple[Node, Node, Node]]:
        """The triples about one entity, with the statements that weigh its edges."""
        node = entity_iri(ref)
        yield from self.graph.triples((node, None, None))
        for statement in self.graph.subjects(RDF.subject, node):
            yield from self.graph.triples((statement, None, None))


def _is_entity(node: Node) -> bool:
    return isinstance(node, URIRef) and str(node).startswith(_ENTITY)
