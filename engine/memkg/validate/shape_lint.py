"""Checks SHACL shapes before a fact meets them: that pySHACL can run each.

Shapes apply to every fact of every domain, so one that pySHACL cannot run would refuse every
write. ``broken_shapes`` finds those when the shapes load, building each shape's constraints as
pySHACL does and parsing each SPARQL query once (``ShaclChecker`` refuses to start on one, and
``rules lint`` names each):

* ``shacl.shape``: a shape or constraint pySHACL cannot load (``sh:minCount "one"``, a
  constraint component with no validator it can run...);
* ``shacl.sparql``: a SPARQL query that does not parse, or that SHACL forbids (``MINUS``,
  ``VALUES``, ``$shapesGraph``...);
* ``shacl.federated``: a query that would reach the network (``SERVICE``, ``FROM``): memkg
  never makes a request on a shape's behalf.

Each is a ``Flaw``, as are those of ``shape_targets`` (shapes that never apply); ``locate``
finds the shapes file and line a flaw is at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pyshacl import ShapesGraph
from pyshacl.constraints import CONSTRAINT_PARAMETERS_MAP
from pyshacl.constraints.sparql.sparql_based_constraints import SPARQLBasedConstraint
from pyshacl.errors import ConstraintLoadWarning
from rdflib import BNode, Graph, Namespace, URIRef
from rdflib import Literal as RdfLiteral
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.term import Node

from memkg.errors import ConfigError

SH = Namespace("http://www.w3.org/ns/shacl#")

Pattern = tuple[Node | None, Node | None, Node | None]
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Flaw:
    """What is wrong with a shape, and how to find it in the files it was read from."""

    code: str
    message: str
    anchors: tuple[Pattern, ...] = ()
    """Triples (None: any term) of which the file the flaw is in holds at least one."""
    needle: Node | None = None
    """The term whose line the flaw is at (a query: its first line)."""
    hint: str = ""
    """A word that line holds besides, when the term is on several."""
    offset: int = 0
    """Lines below the needle's first (the line of a query the parser stopped at)."""
    severity: Severity = "error"


@dataclass(frozen=True)
class Located:
    flaw: Flaw
    file: str
    line: int


_PROBE = URIRef("urn:memkg:shape-lint")
"""The focus (and value) node a query is bound to when checked: any node does."""
_UNSAFE_TEXT = "memkg never makes a network request on a shape's behalf"


def broken_shapes(shapes: Graph | ShapesGraph) -> list[Flaw]:
    """Each shape of ``shapes`` that pySHACL could not run: the constraints it would fail to
    load, and the SPARQL queries it would fail to parse or that would reach the network."""
    graph = shapes if isinstance(shapes, ShapesGraph) else ShapesGraph(shapes)
    try:
        harvested = list(graph.shapes)
    except Exception as exc:  # pySHACL raises several types; each means shapes it cannot load
        return [Flaw("shacl.shape", f"the shapes do not load: {_said(exc)}")]
    found = []
    for shape in harvested:
        if not shape.deactivated:
            found += _shape_flaws(graph, shape)
    return found


def refuse_broken(shapes: ShapesGraph, files: Mapping[str, Path]) -> None:
    """Raise ``ConfigError`` naming the first of ``broken_shapes`` (at its file and line, among
    ``files``, when given), and how many more there are."""
    flaws = broken_shapes(shapes)
    if not flaws:
        return
    found = locate(flaws, files) if files else [Located(f, "", 0) for f in flaws]
    first = found[0]
    where = f"{first.file}:{first.line}: " if first.file else ""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise ConfigError(
        f"{where}{first.flaw.message}{more}. Every write in every domain is refused until the "
        "shapes load; `memkg rules lint` lists each problem with its file and line",
        code=first.flaw.code,
    )


def _shape_flaws(graph: ShapesGraph, shape: Any) -> list[Flaw]:
    name = shape_name(graph.graph, shape.node)
    anchors = shape_anchors(graph.graph, shape.node)
    needle = named_owner(graph.graph, shape.node)
    found = []
    queries: list[tuple[Any, Node | None]] = []
    components = dict.fromkeys(CONSTRAINT_PARAMETERS_MAP[p] for p, _ in
                               graph.graph.predicate_objects(shape.node)
                               if p in CONSTRAINT_PARAMETERS_MAP)  # fmt: skip
    for component in components:
        try:
            built = component(shape)
        except ConstraintLoadWarning:  # pySHACL skips the constraint, as here
            continue
        except Exception as exc:  # each is a constraint pySHACL would not load
            message = f"{name}: pySHACL cannot load its {component.constraint_name()}: {_said(exc)}"
            found.append(Flaw("shacl.shape", message, anchors, needle))
            continue
        if isinstance(built, SPARQLBasedConstraint):
            queries += [(h, None) for h in built.sparql_constraints if not h.deactivated]
    try:
        custom = [c.make_validator_for_shape(shape) for c in shape.find_custom_constraints()]
    except Exception as exc:  # as above
        message = f"{name}: pySHACL cannot load a constraint component it uses: {_said(exc)}"
        found.append(Flaw("shacl.shape", message, anchors, needle))
        custom = []
    queries += [(bound.query_helper, _PROBE) for bound in custom]
    for helper, value in queries:
        flaw = _query_flaw(graph.graph, name, helper, value)
        if flaw is not None:
            found.append(flaw)
    return found


def _query_flaw(graph: Graph, name: str, helper: Any, value: Node | None) -> Flaw | None:
    """What is wrong with one SPARQL query of a shape, as pySHACL would run it."""
    node = next((o for p in (SH.select, SH.ask) for o in graph.objects(helper.node, p)), None)
    anchors: tuple[Pattern, ...] = ((None, SH.select, node), (None, SH.ask, node))
    text = str(helper.select_text)
    try:  # as written, to point at the author's own line
        algebra = prepareQuery(text, initNs=helper.prefixes).algebra
    except Exception as exc:  # rdflib raises several types for a bad query
        said, line = _parse_error(exc)
        lead = next((i for i, row in enumerate(text.splitlines()) if row.strip()), 0)
        return Flaw(
            "shacl.sparql",
            f"{name}: its SPARQL query does not parse ({said}): fix the query, or remove the "
            "constraint",
            anchors, node, offset=max(0, line - 1 - lead),
        )  # fmt: skip
    if _reaches_network(algebra):
        return Flaw(
            "shacl.federated",
            f"{name}: its SPARQL query reads another graph (SERVICE, FROM or FROM NAMED), which "
            f"would reach the network: {_UNSAFE_TEXT}; query the fact's own graph ($this)",
            anchors, node,
        )  # fmt: skip
    extra = helper.param_bind_map.keys() if value is not None else None
    try:  # SHACL's own limits on the query, and the text pySHACL runs
        _, run = helper.pre_bind_variables(_PROBE, valuenode=value, extravars=extra)
        if run != text:
            prepareQuery(helper.apply_prefixes(run))
    except Exception as exc:  # as above
        return Flaw(
            "shacl.sparql", f"{name}: pySHACL would not run its SPARQL query: {_said(exc)}",
            anchors, node,
        )  # fmt: skip
    return None


def _parse_error(exc: Exception) -> tuple[str, int]:
    """What a query's parse error says, and the line of the query it is at (1 if unknown)."""
    line = getattr(exc, "lineno", None)  # pyparsing's, for text that is no SPARQL
    if not isinstance(line, int):
        return _said(exc), 1
    at = f"line {line}, column {getattr(exc, 'col', '?')} of the query"
    return f"{_said(getattr(exc, 'msg', exc))}, at {at}", line


def _reaches_network(algebra: object) -> bool:
    """Whether a parsed query names a graph to fetch: ``SERVICE``, ``FROM`` or ``FROM NAMED``."""
    todo = [algebra]
    while todo:
        item = todo.pop()
        if isinstance(item, CompValue):
            if item.name == "ServiceGraphPattern" or dict.get(item, "datasetClause"):
                return True
            todo.extend(dict.values(item))
        elif isinstance(item, list | tuple | set):
            todo.extend(item)
    return False


def locate(flaws: Iterable[Flaw], files: Mapping[str, Path]) -> list[Located]:
    """Each flaw at the file (of ``files``: name → path) that holds it and the line it is on;
    in each file that holds it, if several do, and in ``ontology/shapes`` at line 1 if none."""
    graphs: dict[str, Graph] = {}
    texts: dict[str, list[str]] = {}
    found = []
    for flaw in flaws:
        holders = []
        for name, path in files.items():
            if name not in graphs:
                graphs[name] = Graph().parse(path, format="turtle")
            if any(_holds(graphs[name], pattern) for pattern in flaw.anchors):
                holders.append(name)
        if not holders:
            found.append(Located(flaw, "ontology/shapes", 1))
        for name in holders:
            if name not in texts:
                texts[name] = files[name].read_text(encoding="utf-8").splitlines()
            found.append(Located(flaw, name, _line(texts[name], flaw)))
    return found


def _holds(graph: Graph, pattern: Pattern) -> bool:
    if all(t is None for t in pattern) or any(isinstance(t, BNode) for t in pattern):
        return False  # a blank node is another in each parse
    return next(iter(graph.triples(pattern)), None) is not None


def _line(rows: list[str], flaw: Flaw) -> int:
    """The line of ``rows`` (1-based) ``flaw`` is at; 1 when its term is on none."""
    needle = flaw.needle
    if isinstance(needle, RdfLiteral):
        first = next((row.strip() for row in str(needle).splitlines() if row.strip()), "")
        at = next((n for n, row in enumerate(rows, 1) if first and first in row), None)
        return at + flaw.offset if at is not None else 1
    if not isinstance(needle, URIRef):
        return 1
    term = re.compile(rf"[:/#]{re.escape(local_name(needle))}(?![\w-]|\.[\w-])")
    lines = [n for n, row in enumerate(rows, 1) if term.search(row)]
    preferred = [n for n in lines if flaw.hint and flaw.hint in rows[n - 1]]
    return (preferred or lines or [1])[0]


def local_name(iri: URIRef) -> str:
    """The last part of an IRI (a key's name, a class's)."""
    return re.split(r"[/#]", str(iri))[-1]


def deactivated(graph: Graph, shape: Node) -> bool:
    """Whether ``shape`` says ``sh:deactivated true``: pySHACL never runs it."""
    return any(v.toPython() is True for v in graph.objects(shape, SH.deactivated)
               if isinstance(v, RdfLiteral))  # fmt: skip


def named_owner(graph: Graph, node: Node, depth: int = 0) -> URIRef | None:
    """The named shape ``node`` is, or is a property (or ``sh:node``, ``sh:not``...) shape of."""
    if isinstance(node, URIRef):
        return node
    if depth > 8:
        return None
    for predicate in (SH.property, SH.node, SH["not"], SH.qualifiedValueShape):
        for parent in graph.subjects(predicate, node):
            found = named_owner(graph, parent, depth + 1)
            if found is not None:
                return found
    return None


def shape_name(graph: Graph, node: Node) -> str:
    """How a message names a shape: its prefixed name, or the named shape it is part of."""
    names = graph.namespace_manager
    if isinstance(node, URIRef):
        return names.normalizeUri(node)
    owner = named_owner(graph, node)
    path = graph.value(node, SH.path)
    on = f" on {names.normalizeUri(path)}" if isinstance(path, URIRef) else ""
    return f"a shape of {names.normalizeUri(owner)}{on}" if owner is not None else f"a shape{on}"


def shape_anchors(graph: Graph, node: Node) -> tuple[Pattern, ...]:
    """The triples that put a shape in a file: its named shape's."""
    owner = named_owner(graph, node)
    return ((owner, None, None),) if owner is not None else ()


def _said(exc: object) -> str:
    """What an exception says, on one line and at most 300 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
