"""Entities named in text, from the domain knowledge: labels, types, brands, categories.

Recall uses it to tell which products, brands or cities a query and a memory are about, so a
memory about another entity of the same type ("Canon PIXMA" for "HP LaserJet 1020") is
rejected, not ranked.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from rdflib import RDF, RDFS, Graph
from rdflib.namespace import SKOS

from memkg.model.vocab import MK, entity_ref

_LINKS = {"memberOf": "brand", "category": "category"}


@dataclass(frozen=True)
class Entity:
    ref: str
    type: str
    """Local name of its class (``Product``, ``Brand``...)."""
    labels: tuple[str, ...]
    links: dict[str, str] = field(default_factory=dict)
    """``brand`` and ``category`` of a product, when the knowledge states them."""
    synonyms: tuple[str, ...] = ()
    """``skos:altLabel``, ``skos:hiddenLabel`` and ``rdfs:comment`` texts: words people use
    for it that its labels do not say. Recall's semantic documents carry them; mentions do not
    use them (a synonym such as "breathing" does not name the condition)."""


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().replace("_", " ").split())


class EntityIndex:
    """Finds entity mentions by label (any language) or by reference (``brand:hp``)."""

    def __init__(self, entities: Iterable[Entity]) -> None:
        self.entities = {e.ref: e for e in entities}
        names: list[tuple[str, str]] = []
        for entity in self.entities.values():
            for label in {*entity.labels, entity.ref.partition(":")[2]}:
                folded = _fold(label)
                if len(folded) >= 2:
                    names.append((folded, entity.ref))
        names.sort(key=lambda item: (-len(item[0]), item[0]))  # longest first
        self._names = [
            (name, ref, re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])" if name.isascii()
                                   else re.escape(name)))
            for name, ref in names
        ]  # fmt: skip

    @classmethod
    def from_graph(cls, graph: Graph) -> EntityIndex:
        found = []
        for node, cls_node in graph.subject_objects(RDF.type):
            ref = entity_ref(str(node))
            if ref is None:
                continue
            labels = tuple(sorted(str(label) for label in graph.objects(node, RDFS.label)))
            links = {}
            for name, role in _LINKS.items():
                target = graph.value(node, MK[name])
                target_ref = entity_ref(str(target)) if target is not None else None
                if target_ref is not None:
                    links[role] = target_ref
            kind = str(cls_node).rpartition("#")[2]
            synonyms = tuple(
                sorted(
                    str(text)
                    for predicate in (SKOS.altLabel, SKOS.hiddenLabel, RDFS.comment)
                    for text in graph.objects(node, predicate)
                )
            )
            found.append(Entity(ref=ref, type=kind, labels=labels, links=links, synonyms=synonyms))
        return cls(found)

    def mentions(self, text: str) -> list[str]:
        """References of the entities ``text`` names, longest label first, no overlaps."""
        folded = _fold(text)
        taken: list[tuple[int, int]] = []
        found: list[str] = []
        for token in re.findall(r"\b[a-z][a-z_]{1,31}:[a-z0-9][a-z0-9_.\-]*", text):
            if token in self.entities and token not in found:
                found.append(token)
        for name, ref, pattern in self._names:
            if name not in folded:  # most names are absent: skip the regex
                continue
            for match in pattern.finditer(folded):
                span = match.span()
                if any(s < span[1] and span[0] < e for s, e in taken):
                    continue
                taken.append(span)
                if ref not in found:
                    found.append(ref)
        return found

    def expand(self, refs: Iterable[str]) -> dict[str, set[str]]:
        """Refs grouped by prefix (``product``, ``brand``...), with their brands and categories."""
        roles: dict[str, set[str]] = {}
        for ref in refs:
            entity = self.entities.get(ref)
            for each in (ref, *(entity.links.values() if entity else ())):
                roles.setdefault(each.partition(":")[0], set()).add(each)
        return roles

    def words(self, refs: Iterable[str]) -> list[str]:
        """What the knowledge says of ``refs`` and the brands and categories they link to:
        labels, then synonyms, each once."""
        said: dict[str, None] = {}
        for ref in refs:
            entity = self.entities.get(ref)
            if entity is None:
                continue
            linked = [self.entities[r] for r in entity.links.values() if r in self.entities]
            for each in (entity, *linked):
                said.update(dict.fromkeys(each.labels))
            said.update(dict.fromkeys(entity.synonyms))
        return list(said)
