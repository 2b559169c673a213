"""Claims: what a fact asserts in the graph, one ``user ─key→ target`` edge per target.

A key whose schema declares ``x-memkg.entity`` names entities: each entity reference in its
value (``airline:MU``, or every item of ``["condition:asthma", ...]``) is a target. Any other
value is one literal target, identified by its canonical JSON. Which keys name entities comes
from the schemas (``EntityKeys``), never from the look of a value: ``"aspirin:100mg"`` in a
free-text key is not an entity.

>>> keys = {("travel", "airline.preferred"): "Airline"}
>>> targets("travel", "airline.preferred", "airline:MU", keys)
(Target(value='airline:MU', entity=True),)
>>> targets("travel", "seat.preference", "window", keys)
(Target(value='"window"', entity=False),)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rdflib import URIRef

from memkg.model.fact import LIVE_STATUSES
from memkg.model.vocab import ENTITY_REF, entity_iri

EntityKeys = Mapping[tuple[str, str], str]
"""``(domain, key)`` → the entity class its values name (``Airline``)."""

LIVE = LIVE_STATUSES
"""Statuses of a fact that still asserts its edges."""


@dataclass(frozen=True)
class Target:
    value: str
    """An entity reference, or the canonical JSON of a literal value."""
    entity: bool

    @property
    def iri(self) -> URIRef:
        return entity_iri(self.value)


def canonical(value: Any) -> str:
    return _CANONICAL.encode(value)


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
"""``json.dumps`` with these options builds this encoder on every call; one is kept instead."""


def targets(domain: str, key: str, value: Any, entity_keys: EntityKeys) -> tuple[Target, ...]:
    if (domain, key) not in entity_keys:
        return (Target(canonical(value), entity=False),)
    items = value if isinstance(value, list) else [value]
    refs = sorted({item for item in items if isinstance(item, str) and ENTITY_REF.match(item)})
    return tuple(Target(ref, entity=True) for ref in refs)


def target_of(domain: str, key: str, value: Any, entity_keys: EntityKeys) -> Target | None:
    """The single target a signal about ``value`` points at; None if it names none."""
    found = targets(domain, key, value, entity_keys)
    if (domain, key) in entity_keys and not isinstance(value, str):
        return None  # a signal is about one entity, never a list of them
    return found[0] if len(found) == 1 else None
