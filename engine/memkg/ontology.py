"""Loads the Turtle files under each root's ``ontology/``: core vocabulary, knowledge, shapes.

Fact shapes are every ``shapes/*.ttl`` but ``knowledge.ttl``, which validates the domain
knowledge itself.

Parsing is done once per ``Ontology``; stages receive the graphs they need.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rdflib import OWL, RDF, RDFS, SKOS, Graph, URIRef

from memkg.errors import ConfigError
from memkg.once import once
from memkg.roots import Roots

LABEL_LIMIT = 1_000
"""The most characters of an entity's label (``rdfs:label``, ``skos:altLabel``,
``skos:hiddenLabel``): names that recall finds in what a user says and that prompts show."""
COMMENT_LIMIT = 20_000
"""The most characters of an ``rdfs:comment``, which recall's documents carry."""
MAX_FILE_BYTES = 64 << 20
"""Largest Turtle file parsed at all: rdflib holds several times a file's size in memory."""
_LIMITS = {RDFS.label: LABEL_LIMIT, SKOS.altLabel: LABEL_LIMIT, SKOS.hiddenLabel: LABEL_LIMIT,
           RDFS.comment: COMMENT_LIMIT}  # fmt: skip


def _parse(paths: list[Path]) -> Graph:
    graph = Graph()
    for path in paths:
        _load(graph, path)
    if _too_long(graph) is not None:  # rare: parse file by file to name the one it is in
        for path in paths:
            _check_texts(path, _load(Graph(), path))
    return graph


def _load(graph: Graph, path: Path) -> Graph:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}",
                          code="ontology.parse") from exc  # fmt: skip
    if size > MAX_FILE_BYTES or not path.is_file():
        raise ConfigError(
            f"{path}: larger than {MAX_FILE_BYTES:,} bytes (or not a file): split the knowledge "
            "into several files under ontology/domains/",
            code="ontology.too_large",
        )
    try:
        return graph.parse(path, format="turtle")
    except Exception as exc:  # rdflib raises many types; all mean a broken file
        raise ConfigError(f"{path}: cannot parse Turtle: {exc}", code="ontology.parse") from exc


def _too_long(graph: Graph) -> tuple[Any, Any, int, int] | None:
    """The first label or comment past its limit: (node, predicate, length, limit)."""
    for predicate, limit in _LIMITS.items():
        for node, value in graph.subject_objects(predicate):
            if len(str(value)) > limit or "\x00" in str(value):
                return node, predicate, len(str(value)), limit
    return None


def _check_texts(path: Path, graph: Graph) -> None:
    """Refuse a label or comment past its limit: every recall and mention scan reads them."""
    found = _too_long(graph)
    if found is None:
        return
    node, predicate, length, limit = found
    names = graph.namespace_manager
    if length <= limit:  # the other reason: a NUL, which no store or prompt can carry
        raise ConfigError(
            f"{path}: {names.normalizeUri(str(node))} has a {names.normalizeUri(predicate)} "
            "holding a NUL character (\\u0000): remove it",
            code="ontology.text_nul",
        )
    hint = " (a description belongs in rdfs:comment)" if limit == LABEL_LIMIT else ""
    raise ConfigError(
        f"{path}: {names.normalizeUri(str(node))} has a {names.normalizeUri(predicate)} of "
        f"{length:,} characters, over the {limit:,} allowed: shorten it{hint}",
        code="ontology.text_too_long",
    )


class Ontology:
    """``ontology/memkg.ttl``, ``ontology/domains/*.ttl`` and ``ontology/shapes/*.ttl`` of the
    roots in force (a later root's file replaces an earlier one of the same name)."""

    def __init__(self, roots: Roots | Path) -> None:
        self.roots = roots if isinstance(roots, Roots) else Roots((roots,))
        core = self.roots.file("ontology/memkg.ttl")
        if core is None:
            raise ConfigError(
                f"{', '.join(map(str, self.roots.paths))}: no ontology/memkg.ttl in any root; "
                "the built-in core root must come first",
                code="ontology.missing",
            )
        self._core = core

    def _files(self) -> dict[str, Path]:
        """Name relative to ``ontology/`` → file, for every Turtle file in force."""
        found = {"memkg.ttl": self._core}
        for sub in ("domains", "shapes"):
            for name, path in self.roots.files(f"ontology/{sub}").items():
                found[f"{sub}/{name}"] = path
        return found

    def file_problems(self) -> list[tuple[str, ConfigError]]:
        """Each Turtle file in force that does not load (``ontology.parse``,
        ``ontology.text_too_long``), named as under a root (``ontology/shapes/x.ttl``):
        checked file by file, so every broken file is named, not only the first."""
        found = []
        for name, path in sorted(self._files().items()):
            try:
                _parse([path])
            except ConfigError as exc:
                found.append((f"ontology/{name}", exc))
        return found

    @once
    def core(self) -> Graph:
        return _parse([self._core])

    @once
    def knowledge(self) -> Graph:
        return _parse(list(self.roots.files("ontology/domains").values()))

    @property
    def fact_shape_files(self) -> dict[str, Path]:
        """``ontology/shapes/<name>.ttl`` → the file, for each file of ``fact_shapes``."""
        shapes = self.roots.files("ontology/shapes")
        return {f"ontology/shapes/{name}": path for name, path in shapes.items()
                if name != "knowledge.ttl"}  # fmt: skip

    @once
    def fact_shapes(self) -> Graph:
        """Shapes every candidate fact is validated against (all but ``knowledge.ttl``)."""
        return _parse(list(self.fact_shape_files.values()))

    @once
    def knowledge_shapes(self) -> Graph:
        found = self.roots.files("ontology/shapes").get("knowledge.ttl")
        return _parse([found] if found else [])

    @once
    def classes(self) -> frozenset[URIRef]:
        """Every class the core vocabulary or the domain knowledge declares (``owl:Class``,
        ``rdfs:Class``, either side of ``rdfs:subClassOf``) or types an entity with."""
        found: set[URIRef] = set()
        for graph in (self.core, self.knowledge):
            for kind in (OWL.Class, RDFS.Class):
                found.update(c for c in graph.subjects(RDF.type, kind) if isinstance(c, URIRef))
            for pair in graph.subject_objects(RDFS.subClassOf):
                found.update(c for c in pair if isinstance(c, URIRef))
        found.update(c for types in self.entity_types.values() for c in types)
        return frozenset(found)

    @once
    def entity_types(self) -> dict[URIRef, tuple[URIRef, ...]]:
        """rdf:type of every node in the domain knowledge, for SHACL ``sh:class`` checks."""
        types: dict[URIRef, list[URIRef]] = {}
        for node, cls in self.knowledge.subject_objects(RDF.type):
            if isinstance(node, URIRef) and isinstance(cls, URIRef):
                types.setdefault(node, []).append(cls)
        return {node: tuple(sorted(found)) for node, found in types.items()}

    @once
    def digest(self) -> str:
        """sha256 over every Turtle file in force, in name order: the ontology revision."""
        sha = hashlib.sha256()
        for name, path in sorted(self._files().items()):
            sha.update(name.encode())
            sha.update(path.read_bytes())
        return sha.hexdigest()
