"""SHACL shapes compiled into direct checks over a small in-memory graph.

pySHACL stays the reference: ``compile_shapes`` compiles only the SHACL core constructs memkg's
shapes use, with pySHACL's semantics, and raises ``NotCompilable`` for anything else so that
the caller falls back to pySHACL. A differential test holds both equal on the shipped shapes
(generated graphs) and on the W3C SHACL core cases for these constructs.

Compiled: node and property shapes; predicate paths; targets ``targetClass`` (with
``rdfs:subClassOf`` in the data), implicit class targets, ``targetNode``,
``targetSubjectsOf``, ``targetObjectsOf``; ``minCount``, ``maxCount``, ``datatype``,
``class``, ``nodeKind``, ``in``, ``hasValue``, ``minInclusive``, ``maxInclusive``,
``minExclusive``, ``maxExclusive``, ``not``, ``and``, ``or``, ``xone``;
``message``, ``severity``, ``deactivated``. Each constraint component is one class that
reads its parameter and checks it (pySHACL's layout), so compiling another construct is
adding a class here and its W3C cases to the test.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from typing import ClassVar

from pyshacl.rdfutil.compare import compare_literal
from rdflib import RDF, RDFS, XSD, BNode, Graph, Literal, Namespace, URIRef
from rdflib.collection import Collection as RdfList
from rdflib.term import Node

from memkg.errors import MemkgError

SH = Namespace("http://www.w3.org/ns/shacl#")
_RDF_TYPE, _SUBCLASS_OF = RDF.type, RDFS.subClassOf

# subject -> predicate -> objects (distinct, in insertion order)
Triples = dict[Node, dict[Node, list[Node]]]


class NotCompilable(MemkgError):
    """The shapes use a construct this module does not compile; the caller uses pySHACL."""

    code = "shacl.not_compiled"


class DataGraph:
    """The data a check reads: outgoing and incoming edges, and ``rdf:type`` closure."""

    def __init__(
        self,
        triples: Iterable[tuple[Node, Node, Node]],
        reverse: Collection[Node] | None = None,
    ) -> None:
        """Index ``triples``; incoming edges only for the ``reverse`` predicates (None: all)."""
        self.out: Triples = {}
        self.into: Triples = {}
        out, into = self.out, self.into
        for s, p, o in triples:
            edges = out.get(s)
            if edges is None:
                edges = out[s] = {}
            objects = edges.get(p)
            if objects is None:
                edges[p] = [o]
            elif o in objects:
                continue
            else:
                objects.append(o)
            if reverse is None or p in reverse:
                into.setdefault(o, {}).setdefault(p, []).append(s)

    @classmethod
    def from_graph(cls, graph: Graph) -> DataGraph:
        return cls(graph.triples((None, None, None)))

    def values(self, node: Node, path: Node) -> list[Node]:
        return self.out.get(node, {}).get(path, [])

    def subjects(self, predicate: Node) -> Iterator[Node]:
        return (s for s, edges in self.out.items() if predicate in edges)

    def objects(self, predicate: Node) -> Iterator[Node]:
        return (o for o, edges in self.into.items() if predicate in edges)

    def subclasses(self, cls: Node) -> set[Node]:
        """``cls`` and every class below it by ``rdfs:subClassOf`` in the data."""
        found, todo = {cls}, [cls]
        while todo:
            for sub in self.into.get(todo.pop(), {}).get(_SUBCLASS_OF, []):
                if sub not in found:
                    found.add(sub)
                    todo.append(sub)
        return found

    def is_instance(self, node: Node, cls: Node) -> bool:
        types = self.values(node, _RDF_TYPE)
        if not types:
            return False
        if cls in types:
            return True
        return any(t in self.subclasses(cls) for t in types)

    def instances(self, cls: Node) -> list[Node]:
        found: dict[Node, None] = {}
        for sub in self.subclasses(cls):
            found.update(dict.fromkeys(self.into.get(sub, {}).get(_RDF_TYPE, [])))
        return list(found)


@dataclass(frozen=True)
class Result:
    """One validation result, as pySHACL reports it."""

    focus: Node
    path: Node | None
    value: Node | None
    source_shape: Node
    component: URIRef
    severity: URIRef
    message: str | None


# -- constraint components --------------------------------------------------------------------


class Constraint:
    """A constraint component: which parameter it reads, and which value nodes fail it."""

    component: ClassVar[URIRef]
    parameter: ClassVar[URIRef]
    # results per failing value node (True) or one result per focus node without a value
    per_value: ClassVar[bool] = True

    def failing(
        self, data: DataGraph, focus: Node, values: list[Node], shapes: Shapes
    ) -> list[Node | None]:
        raise NotImplementedError


class _PerValue(Constraint):
    def failing(
        self, data: DataGraph, focus: Node, values: list[Node], shapes: Shapes
    ) -> list[Node | None]:
        return [v for v in values if not self.holds(data, v, shapes)]

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class MinCount(Constraint):
    component = SH.MinCountConstraintComponent
    parameter = SH.minCount
    per_value = False
    bound: int

    def failing(
        self, data: DataGraph, focus: Node, values: list[Node], shapes: Shapes
    ) -> list[Node | None]:
        return [None] if len(values) < self.bound else []


@dataclass(frozen=True)
class MaxCount(Constraint):
    component = SH.MaxCountConstraintComponent
    parameter = SH.maxCount
    per_value = False
    bound: int

    def failing(
        self, data: DataGraph, focus: Node, values: list[Node], shapes: Shapes
    ) -> list[Node | None]:
        return [None] if len(values) > self.bound else []


# rdflib's closed namespaces build a term on every attribute access: read them once
_RDFS_LITERAL, _RDFS_DATATYPE, _XSD_STRING, _LANG_STRING = (
    RDFS.Literal, RDFS.Datatype, XSD.string, RDF.langString,
)  # fmt: skip
_PYTHON_TYPES: dict[URIRef, type | tuple[type, ...]] = {
    XSD.string: (str, bytes),
    RDF.langString: (str, bytes),
    XSD.integer: int,
    XSD.float: float,
    XSD.decimal: Decimal,
    XSD.boolean: bool,
    XSD.date: date,
    XSD.time: time,
    XSD.dateTime: datetime,
}


@dataclass(frozen=True)
class Datatype(_PerValue):
    component = SH.DatatypeConstraintComponent
    parameter = SH.datatype
    datatype: URIRef

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        if not isinstance(value, Literal):
            return False
        rule = self.datatype
        if value.datatype == rule:
            if getattr(value, "ill_typed", None) is True:
                return False
            return self._actual(value)
        if rule == _RDFS_LITERAL:
            return True
        if rule == _RDFS_DATATYPE and value.datatype:
            return True
        if value.datatype is None and value.language is None and rule == _XSD_STRING:
            return self._actual(value)
        if rule == _LANG_STRING and value.language:
            return self._actual(value)
        return False

    def _actual(self, value: Literal) -> bool:
        expected = _PYTHON_TYPES.get(self.datatype)
        return expected is None or isinstance(value.value, expected)


@dataclass(frozen=True)
class Class(_PerValue):
    component = SH.ClassConstraintComponent
    parameter = SH["class"]
    cls: Node

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return not isinstance(value, Literal) and data.is_instance(value, self.cls)


_KINDS: dict[Node, tuple[type, ...]] = {
    SH.IRI: (URIRef,),
    SH.BlankNode: (BNode,),
    SH.Literal: (Literal,),
    SH.BlankNodeOrIRI: (BNode, URIRef),
    SH.BlankNodeOrLiteral: (BNode, Literal),
    SH.IRIOrLiteral: (URIRef, Literal),
}


@dataclass(frozen=True)
class NodeKind(_PerValue):
    component = SH.NodeKindConstraintComponent
    parameter = SH.nodeKind
    kinds: tuple[type, ...]

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return isinstance(value, self.kinds)


@dataclass(frozen=True)
class In(_PerValue):
    component = SH.InConstraintComponent
    parameter = SH["in"]
    allowed: tuple[Node, ...]

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return value in self.allowed


@dataclass(frozen=True)
class HasValue(Constraint):
    component = SH.HasValueConstraintComponent
    parameter = SH.hasValue
    per_value = False
    wanted: Node

    def failing(
        self, data: DataGraph, focus: Node, values: list[Node], shapes: Shapes
    ) -> list[Node | None]:
        return [] if any(v == self.wanted for v in values) else [None]


@dataclass(frozen=True)
class _Range(_PerValue):
    bound: Literal

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        if not isinstance(value, Literal):
            return False
        if isinstance(self.bound.value, str) != isinstance(value.value, str):
            return False
        try:
            return self.accept(compare_literal(value, self.bound))  # type: ignore[no-untyped-call]
        except (TypeError, NotImplementedError):
            return False

    def accept(self, comparison: int) -> bool:
        raise NotImplementedError


class MinInclusive(_Range):
    component = SH.MinInclusiveConstraintComponent
    parameter = SH.minInclusive

    def accept(self, comparison: int) -> bool:
        return comparison >= 0


class MaxInclusive(_Range):
    component = SH.MaxInclusiveConstraintComponent
    parameter = SH.maxInclusive

    def accept(self, comparison: int) -> bool:
        return comparison <= 0


class MinExclusive(_Range):
    component = SH.MinExclusiveConstraintComponent
    parameter = SH.minExclusive

    def accept(self, comparison: int) -> bool:
        return comparison > 0


class MaxExclusive(_Range):
    component = SH.MaxExclusiveConstraintComponent
    parameter = SH.maxExclusive

    def accept(self, comparison: int) -> bool:
        return comparison < 0


@dataclass(frozen=True)
class Not(_PerValue):
    component = SH.NotConstraintComponent
    parameter = SH["not"]
    shape: Node

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return not shapes.conforms(self.shape, data, value)


@dataclass(frozen=True)
class And(_PerValue):
    component = SH.AndConstraintComponent
    parameter = SH["and"]
    members: tuple[Node, ...]

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return all(shapes.conforms(s, data, value) for s in self.members)


@dataclass(frozen=True)
class Or(_PerValue):
    component = SH.OrConstraintComponent
    parameter = SH["or"]
    members: tuple[Node, ...]

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return any(shapes.conforms(s, data, value) for s in self.members)


@dataclass(frozen=True)
class Xone(_PerValue):
    component = SH.XoneConstraintComponent
    parameter = SH.xone
    members: tuple[Node, ...]

    def holds(self, data: DataGraph, value: Node, shapes: Shapes) -> bool:
        return sum(1 for s in self.members if shapes.conforms(s, data, value)) == 1


# -- reading the shapes graph -----------------------------------------------------------------


def _single(graph: Graph, shape: Node, parameter: Node) -> Node:
    values = list(graph.objects(shape, parameter))
    if len(values) != 1:
        raise NotCompilable(f"{shape} has {len(values)} values for {parameter}")
    return values[0]


def _list(graph: Graph, shape: Node, parameter: Node) -> tuple[Node, ...]:
    return tuple(RdfList(graph, _single(graph, shape, parameter)))


def _integer(graph: Graph, shape: Node, parameter: Node) -> int:
    value = _single(graph, shape, parameter)
    if not isinstance(value, Literal) or not isinstance(value.value, int):
        raise NotCompilable(f"{parameter} of {shape} is not an integer")
    return value.value


def _literal(graph: Graph, shape: Node, parameter: Node) -> Literal:
    value = _single(graph, shape, parameter)
    if not isinstance(value, Literal):
        raise NotCompilable(f"{parameter} of {shape} is not a literal")
    return value


def _iri(graph: Graph, shape: Node, parameter: Node) -> URIRef:
    value = _single(graph, shape, parameter)
    if not isinstance(value, URIRef):
        raise NotCompilable(f"{parameter} of {shape} is not an IRI")
    return value


def _kinds(graph: Graph, shape: Node, parameter: Node) -> tuple[type, ...]:
    value = _single(graph, shape, parameter)
    if value not in _KINDS:
        raise NotCompilable(f"{value} is not a node kind")
    return _KINDS[value]


_READERS: dict[Node, Callable[[Graph, Node, Node], Constraint]] = {
    SH.minCount: lambda g, s, p: MinCount(_integer(g, s, p)),
    SH.maxCount: lambda g, s, p: MaxCount(_integer(g, s, p)),
    SH.datatype: lambda g, s, p: Datatype(_iri(g, s, p)),
    SH["class"]: lambda g, s, p: Class(_single(g, s, p)),
    SH.nodeKind: lambda g, s, p: NodeKind(_kinds(g, s, p)),
    SH["in"]: lambda g, s, p: In(_list(g, s, p)),
    SH.hasValue: lambda g, s, p: HasValue(_single(g, s, p)),
    SH.minInclusive: lambda g, s, p: MinInclusive(_literal(g, s, p)),
    SH.maxInclusive: lambda g, s, p: MaxInclusive(_literal(g, s, p)),
    SH.minExclusive: lambda g, s, p: MinExclusive(_literal(g, s, p)),
    SH.maxExclusive: lambda g, s, p: MaxExclusive(_literal(g, s, p)),
    SH["not"]: lambda g, s, p: Not(_single(g, s, p)),
    SH["and"]: lambda g, s, p: And(_list(g, s, p)),
    SH["or"]: lambda g, s, p: Or(_list(g, s, p)),
    SH.xone: lambda g, s, p: Xone(_list(g, s, p)),
}
# several values of these each make a constraint of their own
_REPEATABLE = {SH["class"], SH["not"], SH["and"], SH["or"], SH.xone, SH.hasValue}
_TARGETS = {SH.targetClass, SH.targetNode, SH.targetSubjectsOf, SH.targetObjectsOf}
# shape parameters that are not constraints and change nothing this module checks
_INERT = {
    RDF.type, SH.path, SH.property, SH.message, SH.severity, SH.deactivated, SH.name,
    SH.description, SH.order, SH.group, SH.defaultValue, RDFS.label, RDFS.comment,
    RDFS.subClassOf, *_TARGETS,
}  # fmt: skip
_SHAPE_TYPES = {SH.NodeShape, SH.PropertyShape}


@dataclass
class Shape:
    node: Node
    path: Node | None
    constraints: list[Constraint] = field(default_factory=list)
    properties: list[Node] = field(default_factory=list)
    message: str | None = None
    severity: URIRef = SH.Violation
    deactivated: bool = False


class Shapes:
    """Every shape of a shapes graph, compiled; ``validate`` gives pySHACL's results."""

    def __init__(self, graph: Graph) -> None:
        self._shapes: dict[Node, Shape] = {}
        self._targets: list[tuple[Node, Node, Node]] = []  # (shape, kind, what)
        for node in _shape_nodes(graph):
            self._compile(graph, node)
        for node in list(self._shapes):
            for kind in _TARGETS:
                for what in graph.objects(node, kind):
                    self._targets.append((node, kind, what))
            types = set(graph.objects(node, RDF.type))
            if RDFS.Class in types and types & _SHAPE_TYPES:
                self._targets.append((node, SH.targetClass, node))

    @property
    def reverse_predicates(self) -> frozenset[Node]:
        """The predicates whose incoming edges ``validate`` reads (``DataGraph(reverse=)``)."""
        found = {t for _shape, kind, t in self._targets if kind == SH.targetObjectsOf}
        return frozenset({_RDF_TYPE, _SUBCLASS_OF, *found})

    @property
    def messages_complete(self) -> bool:
        """Every shape that can report a result carries its own ``sh:message``.

        pySHACL words a message itself for a shape without one; this module does not, so
        without messages the caller keeps pySHACL's wording by not using these checks.
        Shapes used only inside ``not``/``and``/``or``/``xone``/``node`` never report.
        """
        reporting, todo = set(), [shape for shape, _kind, _what in self._targets]
        while todo:
            node = todo.pop()
            if node not in reporting:
                reporting.add(node)
                todo.extend(self._shapes[node].properties)
        return all(
            self._shapes[n].message is not None for n in reporting if self._shapes[n].constraints
        )

    def _compile(self, graph: Graph, node: Node) -> Shape:
        found = self._shapes.get(node)
        if found is not None:
            return found
        path = graph.value(node, SH.path)
        if path is not None and not isinstance(path, URIRef):
            raise NotCompilable(f"{node}: only predicate paths are compiled")
        shape = self._shapes[node] = Shape(node, path)
        for parameter in set(graph.predicates(node)):
            if parameter in _INERT:
                continue
            reader = _READERS.get(parameter)
            if reader is None:
                raise NotCompilable(f"{node}: {parameter} is not compiled")
            if parameter in _REPEATABLE:
                for value in graph.objects(node, parameter):
                    single = Graph()
                    single.add((node, parameter, value))
                    for triple in _list_triples(graph, value):
                        single.add(triple)
                    shape.constraints.append(reader(single, node, parameter))
            else:
                shape.constraints.append(reader(graph, node, parameter))
        messages = list(graph.objects(node, SH.message))
        if len(messages) > 1:
            raise NotCompilable(f"{node}: several messages")
        shape.message = str(messages[0]) if messages else None
        severity = graph.value(node, SH.severity)
        if severity is not None:
            if not isinstance(severity, URIRef):
                raise NotCompilable(f"{node}: severity is not an IRI")
            shape.severity = severity
        deactivated = graph.value(node, SH.deactivated)
        shape.deactivated = deactivated is not None and deactivated == Literal(True)
        shape.properties = list(graph.objects(node, SH.property))
        for nested in shape.properties:
            self._compile(graph, nested)
        for constraint in shape.constraints:
            for member in _nested(constraint):
                self._compile(graph, member)
        return shape

    def validate(self, data: DataGraph) -> list[Result]:
        results: list[Result] = []
        for shape_node, focus in self._focus_nodes(data):
            results.extend(self._evaluate(self._shapes[shape_node], data, focus))
        return results

    def _focus_nodes(self, data: DataGraph) -> Iterator[tuple[Node, Node]]:
        seen: set[tuple[Node, Node]] = set()
        for shape, kind, what in self._targets:
            if kind == SH.targetNode:
                nodes: Iterable[Node] = [what]
            elif kind == SH.targetClass:
                nodes = data.instances(what)
            elif kind == SH.targetSubjectsOf:
                nodes = data.subjects(what)
            else:
                nodes = data.objects(what)
            for node in nodes:
                if (shape, node) not in seen:
                    seen.add((shape, node))
                    yield shape, node

    def _evaluate(self, shape: Shape, data: DataGraph, focus: Node) -> list[Result]:
        if shape.deactivated:
            return []
        values = [focus] if shape.path is None else data.values(focus, shape.path)
        results = []
        for constraint in shape.constraints:
            for value in constraint.failing(data, focus, values, self):
                results.append(
                    Result(
                        focus=focus,
                        path=shape.path,
                        value=value,
                        source_shape=shape.node,
                        component=constraint.component,
                        severity=shape.severity,
                        message=shape.message,
                    )
                )
        for nested in shape.properties:
            for value in values:
                results.extend(self._evaluate(self._shapes[nested], data, value))
        return results

    def conforms(self, shape: Node, data: DataGraph, focus: Node) -> bool:
        return not self._evaluate(self._shapes[shape], data, focus)


def _nested(constraint: Constraint) -> tuple[Node, ...]:
    if isinstance(constraint, Not):
        return (constraint.shape,)
    if isinstance(constraint, And | Or | Xone):
        return constraint.members
    return ()


def _list_triples(graph: Graph, head: Node) -> Iterator[tuple[Node, Node, Node]]:
    while isinstance(head, BNode):
        for predicate in (RDF.first, RDF.rest):
            for value in graph.objects(head, predicate):
                yield head, predicate, value
        head = graph.value(head, RDF.rest)  # type: ignore[assignment]


def _shape_nodes(graph: Graph) -> list[Node]:
    """Shapes that can be targeted: typed as shapes, or carrying a target."""
    found: list[Node] = []
    for shape_type in _SHAPE_TYPES:
        found.extend(graph.subjects(RDF.type, shape_type))
    for kind in _TARGETS:
        found.extend(graph.subjects(kind))
    found.extend(s for s in graph.subjects(SH.path) if s not in found)
    return list(dict.fromkeys(found))


def compile_shapes(graph: Graph) -> Shapes:
    """The shapes of ``graph`` as direct checks; ``NotCompilable`` if one cannot be."""
    return Shapes(graph)
