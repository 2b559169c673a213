"""Loads the Turtle files under ``ontology/``: core vocabulary, domain knowledge, shapes.

Fact shapes are every ``shapes/*.ttl`` but ``knowledge.ttl``, which validates the domain
knowledge itself.

Parsing is done once per ``Ontology``; stages receive the graphs they need.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path

from rdflib import RDF, Graph, URIRef

from memkg.errors import ConfigError


def _parse(paths: list[Path]) -> Graph:
    graph = Graph()
    for path in paths:
        try:
            graph.parse(path, format="turtle")
        except Exception as exc:  # rdflib raises many types; all mean a broken file
            raise ConfigError(f"{path}: cannot parse Turtle: {exc}", code="ontology.parse") from exc
    return graph


class Ontology:
    """The ontology folder: ``memkg.ttl``, ``domains/*.ttl``, ``shapes/*.ttl``."""

    def __init__(self, folder: Path) -> None:
        if not (folder / "memkg.ttl").is_file():
            raise ConfigError(
                f"{folder}: no memkg.ttl here; point EngineConfig.root at the memkg project folder",
                code="ontology.missing",
            )
        self.folder = folder

    @cached_property
    def core(self) -> Graph:
        return _parse([self.folder / "memkg.ttl"])

    @cached_property
    def knowledge(self) -> Graph:
        return _parse(sorted((self.folder / "domains").glob("*.ttl")))

    @cached_property
    def fact_shapes(self) -> Graph:
        """Shapes every candidate fact is validated against (all but ``knowledge.ttl``)."""
        files = sorted((self.folder / "shapes").glob("*.ttl"))
        return _parse([path for path in files if path.name != "knowledge.ttl"])

    @cached_property
    def knowledge_shapes(self) -> Graph:
        return _parse([self.folder / "shapes" / "knowledge.ttl"])

    @cached_property
    def entity_types(self) -> dict[URIRef, tuple[URIRef, ...]]:
        """rdf:type of every node in the domain knowledge, for SHACL ``sh:class`` checks."""
        types: dict[URIRef, list[URIRef]] = {}
        for node, cls in self.knowledge.subject_objects(RDF.type):
            if isinstance(node, URIRef) and isinstance(cls, URIRef):
                types.setdefault(node, []).append(cls)
        return {node: tuple(sorted(found)) for node, found in types.items()}

    @cached_property
    def digest(self) -> str:
        """sha256 over every Turtle file, in path order: the ontology revision."""
        sha = hashlib.sha256()
        for path in sorted(self.folder.rglob("*.ttl")):
            sha.update(str(path.relative_to(self.folder)).encode())
            sha.update(path.read_bytes())
        return sha.hexdigest()
