"""Finds SHACL shapes that never apply, or that refuse every value, against the keys and
classes in force (``rules lint`` reports them, each a ``shape_lint.Flaw``):

* ``shacl.unknown_key`` (a warning: the examples' shapes name the keys of example domains a
  root may replace): a target or path naming a key no domain declares;
* ``shacl.literal_key`` (a warning): a shape on a key whose values name no entity: only entity
  values are ``key:`` triples of a candidate's graph (``shacl.ShaclChecker``), so the key's JSON
  Schema alone checks them;
* ``shacl.javascript`` (a warning): ``sh:js``, which memkg never runs;
* ``shacl.unknown_class``: ``sh:class`` naming a class no ontology file declares: no entity is
  of it, so every fact the shape applies to is refused.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Iterator

from rdflib import RDF, BNode, Graph, URIRef
from rdflib.term import Node

from memkg.model.keyspec import KeySpec
from memkg.model.vocab import KEY
from memkg.validate.shape_lint import (
    SH,
    Flaw,
    Pattern,
    deactivated,
    local_name,
    named_owner,
    shape_anchors,
    shape_name,
)

_PATH_STEPS = (SH.inversePath, SH.alternativePath, SH.zeroOrMorePath, SH.oneOrMorePath,
               SH.zeroOrOnePath)  # fmt: skip
_TARGETS = (SH.targetSubjectsOf, SH.targetObjectsOf, SH.path)


def idle_shapes(shapes: Graph, specs: Iterable[KeySpec], classes: Collection[URIRef]) -> list[Flaw]:
    """Shapes that never apply or refuse every value, against ``specs`` (the current key specs
    of every domain in force) and ``classes`` (those the ontology declares)."""
    by_key: dict[str, list[KeySpec]] = {}
    for spec in specs:
        by_key.setdefault(spec.key, []).append(spec)
    names = shapes.namespace_manager
    found = []
    for (owner, term), predicates in _key_uses(shapes).items():
        key = term.removeprefix(str(KEY))
        said = " and ".join(names.normalizeUri(p) for p in predicates)
        where = f"{shape_name(shapes, owner)}: {said} name{'s' * (len(predicates) == 1)}"
        anchors: tuple[Pattern, ...] = tuple((None, p, term) for p in predicates)
        hint = local_name(predicates[0])
        declared = by_key.get(key)
        if not declared:
            close = difflib.get_close_matches(key, sorted(by_key), n=3, cutoff=0.6)
            also = f"; did you mean {', '.join(close)}?" if close else ""
            message = (
                f"{where} key {key}, which no domain in force declares, so the shape never "
                f"applies and checks nothing{also} (`memkg keys DOMAIN` lists the keys)"
            )
            found.append(Flaw("shacl.unknown_key", message, anchors, term, hint, 0, "warning"))
        elif not any(spec.entity for spec in declared):
            files = ", ".join(sorted({spec.source_file for spec in declared}))
            message = (
                f"{where} key {key}, whose values name no entity (its schema declares no "
                "x-memkg.entity); only values that name entities reach the SHACL graph, so the "
                "shape never applies: such keys are validated by their JSON Schema "
                f"({files}); say it there, and remove the shape"
            )
            found.append(Flaw("shacl.literal_key", message, anchors, term, hint, 0, "warning"))
    for shape, _ in shapes.subject_objects(SH.js):
        if not deactivated(shapes, shape):
            message = (
                f"{shape_name(shapes, shape)}: sh:js: memkg runs no JavaScript, so this "
                "constraint is never checked; write it with core constraints or sh:sparql"
            )
            found.append(Flaw("shacl.javascript", message, shape_anchors(shapes, shape),
                              named_owner(shapes, shape), "js", 0, "warning"))  # fmt: skip
    found += _class_flaws(shapes, classes)
    return found


def _key_uses(shapes: Graph) -> dict[tuple[Node, URIRef], tuple[URIRef, ...]]:
    """(owning shape, ``key:`` IRI) → the predicates by which active shapes name it, for each
    key a shape targets or walks a path through."""
    uses: dict[tuple[Node, URIRef], list[URIRef]] = {}
    for predicate in _TARGETS:
        for shape, value in shapes.subject_objects(predicate):
            if deactivated(shapes, shape):
                continue
            owner = named_owner(shapes, shape) or shape
            terms = _path_terms(shapes, value) if predicate == SH.path else [value]
            for term in terms:
                if isinstance(term, URIRef) and term.startswith(str(KEY)):
                    kept = uses.setdefault((owner, term), [])
                    if predicate not in kept:
                        kept.append(predicate)
    return {found: tuple(predicates) for found, predicates in uses.items()}


def _class_flaws(shapes: Graph, classes: Collection[URIRef]) -> list[Flaw]:
    names = shapes.namespace_manager
    known = {names.normalizeUri(c): local_name(c) for c in classes}
    found = []
    for cls in dict.fromkeys(c for s, c in shapes.subject_objects(SH["class"])
                             if not deactivated(shapes, s)):  # fmt: skip
        if not isinstance(cls, URIRef) or cls in classes:
            continue
        close = difflib.get_close_matches(local_name(cls), sorted(set(known.values())), 3, 0.6)
        hint = [q for q, local in sorted(known.items()) if local in close]
        also = f"; did you mean {', '.join(hint[:3])}?" if hint else ";"
        users = sorted({shape_name(shapes, s) for s in shapes.subjects(SH["class"], cls)})
        message = (
            f"{', '.join(users)}: sh:class {names.normalizeUri(cls)} names a class no ontology "
            "file declares (ontology/memkg.ttl, ontology/domains/*.ttl), so no value is of it "
            "(every fact a shape requires it of is refused; under sh:not, sh:or or sh:xone the "
            f"test never does what it says){also} declare the class and its entities under "
            "ontology/domains/, or correct the name"
        )
        found.append(Flaw("shacl.unknown_class", message, ((None, SH["class"], cls),), cls,
                          "class"))  # fmt: skip
    return found


def _path_terms(graph: Graph, path: Node, depth: int = 0) -> Iterator[Node]:
    """The IRIs a property path walks through (sequences, alternatives, inverses...)."""
    if not isinstance(path, BNode):
        yield path
        return
    if depth > 16:
        return
    steps = [o for p in _PATH_STEPS for o in graph.objects(path, p)]
    if graph.value(path, RDF.first) is not None:
        steps += list(graph.items(path))
    for step in steps:
        yield from _path_terms(graph, step, depth + 1)
