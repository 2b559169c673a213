"""SHACL validation of candidate facts, each on its own small graph.

The shapes are compiled into direct checks (``shape_checks``) when every construct they use
is one that module compiles; otherwise, or with ``compiled=False``, pySHACL runs them. pySHACL
is the reference: a differential test keeps both equal.

Per DESIGN section 7: validate the delta (the candidates, plus the type triples of the entities
they name, or ``sh:class`` fails), never the whole store; parse shapes once. A batch of
candidates goes through one pySHACL run, each candidate a distinct focus node, and results are
mapped back by focus node. Pass/fail is computed from result severities, not ``conforms``.
Shapes pySHACL could not run (a constraint it cannot load, a SPARQL query that does not parse
or would reach the network) are refused when the checker is built (``shape_lint``); whatever
pySHACL still raises while it checks is ``shacl.failed``, and the fact is not stored.

Verdicts are memoised by the candidate's *signature*: the fields that shape the candidate's
graph (key, kind, source, sensitivity, consent, the entities named) plus, for every path some
shape constrains by value, what the verdict can depend on. A path constrained only by bounds
(``sh:minInclusive`` ... ``sh:maxExclusive``: confidence in [0, 1]) enters the signature as the
side of each bound its value falls on (below, on, above, or not comparable, as both checkers
compare), so every confidence inside the range shares one entry; a path with any other value
constraint (``sh:in``, patterns, comparisons...) enters it by value. Paths the shapes only check
for datatype and cardinality (observed time, the user node, free text) are left out, since any
value of the right datatype gets the same verdict. The constraint kinds are read from the
shapes at load, so adding a value constraint to a path adds it to the signature; shapes with
SPARQL or JavaScript constraints turn memoisation off.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyshacl import ShapesGraph
from pyshacl import Validator as _PyShaclValidator
from pyshacl.graph_abstraction import DataGraph
from pyshacl.pytypes import GraphLike
from pyshacl.rdfutil.compare import compare_literal
from rdflib import RDF, XSD, Graph, Literal, Namespace, URIRef
from rdflib.term import Node

from memkg.errors import ConfigError
from memkg.model.report import Problem
from memkg.model.source import Source
from memkg.model.vocab import ENTITY_REF, KEY, MK, entity_iri, user_iri
from memkg.validate.shape_checks import DataGraph as CheckedGraph
from memkg.validate.shape_checks import NotCompilable, Shapes, compile_shapes
from memkg.validate.shape_lint import refuse_broken

Triple = tuple[Node, Node, Node]

SH = Namespace("http://www.w3.org/ns/shacl#")


@dataclass(frozen=True)
class Candidate:
    """The fields of a fact that shapes look at."""

    user_id: str
    key: str
    kind: str
    source: str
    confidence: float
    sensitivity: str
    observed_at: datetime
    valid_until: datetime | None
    consent_granted: bool
    entities: tuple[str, ...]
    literal: object = None


class _Validator(_PyShaclValidator):
    """pySHACL's validator with a shapes graph harvested once and reused across runs."""

    def __init__(self, data: DataGraph, shapes: ShapesGraph, options: dict[str, object]) -> None:
        super().__init__(data, shacl_graph=_EMPTY, options=options)
        self.shacl_graph = shapes


_EMPTY = Graph()
_MEMO_LIMIT = 50_000

# Constraint parameters whose verdict does not depend on a value's identity. ``sh:class`` is
# here because candidate graphs type every node from signature fields alone: the user node is
# always ``mk:User`` and entity types follow from the entities, which are in the signature.
_STRUCTURAL = {
    SH.path,
    SH.datatype,
    SH.minCount,
    SH.maxCount,
    SH.nodeKind,
    SH["class"],
    SH.message,
    SH.name,
    SH.description,
    SH.severity,
    SH.order,
    SH.group,
    SH.deactivated,
    RDF.type,
}
_COMPARISONS = (SH.equals, SH.disjoint, SH.lessThan, SH.lessThanOrEquals)


_BOUNDS = frozenset({SH.minInclusive, SH.maxInclusive, SH.minExclusive, SH.maxExclusive})

ValuePaths = dict[Node, tuple[Literal, ...] | None]
"""Paths some active shape constrains by value: to the bounds that are all that constrains
the path (its signature is the side of each bound its value is on), or to None (its value)."""


def _value_paths(shapes: Graph) -> ValuePaths | None:
    """Paths some active shape constrains by value; None when memoising would be unsound."""
    if any(shapes.triples((None, SH.sparql, None))) or any(shapes.triples((None, SH.js, None))):
        return None
    found: dict[Node, list[Literal] | None] = {}
    for shape, path in shapes.subject_objects(SH.path):
        if shapes.value(shape, SH.deactivated) == Literal(True):
            continue
        constraining = {p for p, _ in shapes.predicate_objects(shape)} - _STRUCTURAL
        if not constraining:
            continue
        bounds = [o for p in constraining & _BOUNDS for o in shapes.objects(shape, p)]
        kept = found.setdefault(path, [])
        if (
            kept is None
            or constraining - _BOUNDS
            or not all(isinstance(b, Literal) for b in bounds)
        ):
            found[path] = None
        else:
            kept.extend(b for b in bounds if isinstance(b, Literal) and b not in kept)
    for predicate in _COMPARISONS:
        found.update((other, None) for _, other in shapes.subject_objects(predicate))
    return {path: None if b is None else tuple(b) for path, b in found.items()}


def _side(value: Literal, bound: Literal) -> int | None:
    """Where ``value`` lies against ``bound`` as both checkers compare it for ``sh:minInclusive``
    and its siblings: -1 below, 0 on, 1 above, None not comparable (each fails every bound)."""
    if isinstance(bound.value, str) != isinstance(value.value, str):
        return None
    try:
        return int(compare_literal(value, bound))  # type: ignore[no-untyped-call]
    except (TypeError, NotImplementedError):
        return None


def _compiled(shapes: Graph) -> Shapes | None:
    """The shapes as direct checks, or None when pySHACL must run them."""
    try:
        compiled = compile_shapes(shapes)
    except NotCompilable:
        return None
    return compiled if compiled.messages_complete else None


class ShaclChecker:
    def __init__(
        self,
        shapes: Graph,
        entity_types: dict[URIRef, tuple[URIRef, ...]],
        *,
        compiled: bool = True,
        sources: Iterable[str] = Source.BUILTIN,
        files: Mapping[str, Path] | None = None,
    ) -> None:
        """``sources``: the sources in force; a candidate's source is typed ``mk:Source`` only
        if it is one of them (``sh:class mk:Source`` in the fact shape). ``files``: the shapes
        files (``ontology/shapes/<name>.ttl`` → path), to name the one a shape that cannot run
        is in: such a shape is refused here (``shape_lint.refuse_broken``), with the shapes
        harvested once, not met by a write."""
        self._shapes = ShapesGraph(shapes)
        refuse_broken(self._shapes, files or {})
        self._compiled = _compiled(shapes) if compiled else None
        self._types = entity_types
        self._source_types = {_term(name): (_SOURCE_CLASS,) for name in sources}
        self._value_paths = _value_paths(shapes)
        self._memo: dict[tuple[object, ...], list[Problem]] = {}
        self._parts = [
            self._part(path, bounds)
            for path, bounds in (self._value_paths or {}).items()
            if path in _FIELDS
        ]
        # pySHACL copies blank property shapes into its report: name them by their node shape
        self._owner = {
            shapes.value(prop, SH.path): parent
            for parent, prop in shapes.subject_objects(SH.property)
            if isinstance(parent, URIRef)
        }

    def forget(self) -> None:
        """Drop the verdicts and literals kept for reuse: they hold the values checked, and an
        erasure leaves no text it read in memory. The memo is replaced, not emptied: a check
        under way keeps filling the one it began with, which goes with it."""
        self._memo = {}
        _literal.cache_clear()

    def check(self, candidates: Sequence[Candidate]) -> list[list[Problem]]:
        """Problems per candidate, in input order."""
        if self._value_paths is None:
            return self._run(candidates)
        # the verdicts are read into ``known`` once: another thread may clear the memo at any
        # time (an erasure's ``forget``, or its own check filling it past the limit)
        memo = self._memo
        signatures = [self._signature(c) for c in candidates]
        known: dict[tuple[object, ...], list[Problem]] = {}
        todo: dict[tuple[object, ...], Candidate] = {}
        for signature, candidate in zip(signatures, candidates, strict=True):
            if signature in known or signature in todo:
                continue
            found = memo.get(signature)
            if found is None:
                todo[signature] = candidate
            else:
                known[signature] = found
        if todo:
            if len(memo) + len(todo) > _MEMO_LIMIT:
                memo.clear()
            for signature, found in zip(todo, self._run(list(todo.values())), strict=True):
                memo[signature] = known[signature] = found
        return [list(known[signature]) for signature in signatures]

    def _signature(self, c: Candidate) -> tuple[object, ...]:
        return (
            c.key,
            c.kind,
            c.source,
            c.sensitivity,
            c.entities,
            c.consent_granted,
            c.valid_until is None,
            bool(c.entities),
            *(part(c) for part in self._parts),
        )

    def _part(self, path: Node, bounds: tuple[Literal, ...] | None) -> Part:
        """What the signature holds of ``path``: its value, or the side of each bound its
        literal in the candidate graph is on (worked out once per value)."""
        read, literal = _FIELDS[path]
        if bounds is None or literal is None:
            return read
        sides: dict[tuple[type, object], tuple[int | None, ...]] = {}

        def side_of_each_bound(c: Candidate) -> object:
            value = read(c)
            if value is None:
                return None  # no triple on the path
            key = (type(value), value)
            found = sides.get(key)
            if found is None:
                if len(sides) >= _MEMO_LIMIT:
                    sides.clear()
                made = literal(value)
                found = sides[key] = tuple(_side(made, bound) for bound in bounds)
            return found

        return side_of_each_bound

    @property
    def compiled(self) -> bool:
        """Whether the shapes run as compiled checks (else through pySHACL)."""
        return self._compiled is not None

    def _run(self, candidates: Sequence[Candidate]) -> list[list[Problem]]:
        if not candidates:
            return []
        triples: list[Triple] = []
        focus: dict[Node, int] = {}
        problems: list[list[Problem]] = [[] for _ in candidates]
        for index, candidate in enumerate(candidates):
            node = URIRef(f"urn:memkg:candidate:{index}")
            found = self._triples(node, candidate)
            if isinstance(found, Problem):
                problems[index].append(found)
            else:
                focus[node] = index
                triples.extend(found)
        if not focus:
            return problems
        if self._compiled is not None:
            data_graph = CheckedGraph(triples, self._compiled.reverse_predicates)
            for result in self._compiled.validate(data_graph):
                if result.severity != _VIOLATION:
                    continue
                problems[focus.get(result.focus, 0)].append(
                    Problem(
                        code="shacl.violation",
                        path=str(result.source_shape)
                        if isinstance(result.source_shape, URIRef)
                        else self._owned(result.path),
                        message=result.message or "violates a SHACL shape",
                        stage="shacl",
                    )
                )
            return problems
        data = Graph()
        for triple in triples:
            data.add(triple)
        validator = _Validator(DataGraph.from_rdflib(data), self._shapes, {"inference": "none"})
        try:
            _conforms, report, _text = validator.run()  # type: ignore[no-untyped-call]
        except Exception as exc:  # pySHACL raises many types; none may reach a caller raw
            raise ConfigError(
                f"the SHACL shapes failed while checking a fact, which was not stored: "
                f"{' '.join(str(exc).split())[:300] or type(exc).__name__}; `memkg rules lint` "
                "checks the shapes files",
                code="shacl.failed",
            ) from exc
        for result in report.subjects(RDF.type, SH.ValidationResult):
            if report.value(result, SH.resultSeverity) != SH.Violation:
                continue
            node = report.value(result, SH.focusNode)
            index = focus.get(node, 0) if node is not None else 0
            shape = report.value(result, SH.sourceShape)
            message = report.value(result, SH.resultMessage)
            problems[index].append(
                Problem(
                    code="shacl.violation",
                    path=str(shape)
                    if isinstance(shape, URIRef)
                    else self._shape_of(report, result),
                    message=str(message) if message is not None else "violates a SHACL shape",
                    stage="shacl",
                )
            )
        return problems

    def _shape_of(self, report: GraphLike, result: Node) -> str:
        return self._owned(report.value(result, SH.resultPath))

    def _owned(self, path: Node | None) -> str:
        owner = self._owner.get(path)
        return f"{owner} (property {path})" if owner is not None else f"shacl property {path}"

    def _triples(self, node: URIRef, c: Candidate) -> list[Triple] | Problem:
        """The candidate's graph; or, if it names something that is no entity, say so."""
        iris = []
        for position, ref in enumerate(c.entities):
            if ENTITY_REF.match(ref) is None:
                return Problem(
                    code="shacl.entity_reference",
                    path="$.value",
                    message=f"{c.key} names entities as type:name (e.g. airline:MU); entity "
                    f"{position + 1} of {len(c.entities)} is not one",
                    stage="shacl",
                )
            iris.append(entity_iri(ref))
        user = user_iri(c.user_id)
        source = _term(c.source)
        g: list[Triple] = [
            (user, _TYPE, _USER),
            (node, _TYPE, _FACT),
            (node, _SUBJECT, user),
            (node, _KEY, _literal(c.key, None)),
            (node, _KIND, _term(c.kind)),
            (node, _SOURCE, source),
            (node, _SENSITIVITY, _term(c.sensitivity)),
            (node, _CONFIDENCE, _literal(Decimal(repr(c.confidence)), _DECIMAL)),
            (node, _OBSERVED_AT, _literal(c.observed_at, _DATETIME)),
        ]
        if c.valid_until is not None:
            g.append((node, _VALID_UNTIL, _literal(c.valid_until, _DATETIME)))
        g.append((node, _CONSENT, _literal(c.consent_granted, None)))
        g.extend((source, _TYPE, cls) for cls in self._source_types.get(source, ()))
        if iris:
            by_key = _key_term(c.key)
            for iri in iris:
                g.append((node, _OBJECT, iri))
                g.append((node, by_key, iri))
                for cls in self._types.get(iri, ()):
                    g.append((iri, _TYPE, cls))
        else:
            g.append((node, _LITERAL, Literal(json.dumps(c.literal, ensure_ascii=False))))
        return g


_VIOLATION, _TYPE, _DECIMAL, _DATETIME = SH.Violation, RDF.type, XSD.decimal, XSD.dateTime
# the candidate graph's terms, made once: rdflib terms cost microseconds each to build
_USER, _FACT, _SUBJECT, _KEY, _KIND, _SOURCE = (
    MK.User, MK.Fact, MK.subject, MK.key, MK.kind, MK.source,
)  # fmt: skip
_SOURCE_CLASS = MK.Source
_SENSITIVITY, _CONFIDENCE, _OBSERVED_AT, _VALID_UNTIL, _CONSENT, _OBJECT, _LITERAL = (
    MK.sensitivity, MK.confidence, MK.observedAt, MK.validUntil, MK.consentGranted, MK.object,
    MK.literalValue,
)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def _literal(value: object, datatype: URIRef | None) -> Literal:
    return Literal(value, datatype=datatype)


@functools.lru_cache(maxsize=256)
def _term(name: str) -> URIRef:
    return MK[name]


@functools.lru_cache(maxsize=1024)
def _key_term(key: str) -> URIRef:
    return KEY[key]


Part = Callable[[Candidate], object]

_FIELDS: dict[Node, tuple[Part, Callable[[Any], Literal] | None]] = {
    MK.subject: (lambda c: c.user_id, None),
    MK.confidence: (lambda c: c.confidence, lambda v: _literal(Decimal(repr(v)), _DECIMAL)),
    MK.observedAt: (lambda c: c.observed_at, lambda v: _literal(v, _DATETIME)),
    MK.validUntil: (lambda c: c.valid_until, lambda v: _literal(v, _DATETIME)),
    MK.consentGranted: (lambda c: c.consent_granted, lambda v: _literal(v, None)),
    MK.literalValue: (
        lambda c: json.dumps(c.literal, sort_keys=True) if not c.entities else None,
        None,
    ),
}
"""Per path a candidate's graph can hold a value on: how to read it from the candidate, and
the literal ``_triples`` makes of it (None: the signature holds the value read)."""
