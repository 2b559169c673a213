"""The RDF vocabulary, as Python names; ``ontology/memkg.ttl`` is its Turtle twin.

A test checks that every term here is declared in the Turtle and vice versa.
"""

from __future__ import annotations

import re

from rdflib import Namespace, URIRef

MK = Namespace("https://memkg.dev/ns#")
KEY = Namespace("https://memkg.dev/key/")
ENTITY = Namespace("https://memkg.dev/entity/")
USER = Namespace("https://memkg.dev/user/")
FACT = Namespace("https://memkg.dev/fact/")
EDGE = Namespace("https://memkg.dev/edge/")
GRAPH = Namespace("https://memkg.dev/graph/")
SIGNAL = Namespace("https://memkg.dev/signal/")
SHAPE = Namespace("https://memkg.dev/shape/")

CLASSES = (
    "User",
    "Fact",
    "Entity",
    "Signal",
    "Kind",
    "Source",
    "Scope",
    "Sensitivity",
    "Status",
    "SignalKind",
    "Airline",
    "City",
    "Country",
    "Condition",
    "Protocol",
    "Allergen",
    "Diet",
    "ProductCategory",
    "Product",
    "Brand",
    "RiskProfile",
    "Channel",
    "Language",
)
PROPERTIES = (
    "subject",
    "key",
    "object",
    "literalValue",
    "kind",
    "source",
    "confidence",
    "scope",
    "sessionId",
    "observedAt",
    "recordedAt",
    "validUntil",
    "sensitivity",
    "status",
    "schemaVersion",
    "sourceRef",
    "consentGranted",
    "consentVersion",
    "auditLogId",
    "purpose",
    "relation",
    "weight",
    "requires",
    "contraindicates",
    "relatedTo",
    "locatedIn",
    "hub",
    "memberOf",
    "category",
    "label",
    "factId",
    "domain",
    "signalKind",
)
INDIVIDUALS = {
    "Kind": ("fact", "preference", "state", "pattern"),
    "Source": ("dialogue", "behavior", "profile", "third_party", "system", "rule"),
    "Scope": ("turn", "session", "global"),
    "Sensitivity": ("public", "restricted", "special", "prohibited"),
    "Status": (
        "active",
        "pending_confirmation",
        "superseded",
        "frozen",
        "expired",
        "retracted",
    ),
    "SignalKind": ("mention", "correction", "ignored", "rejected"),
}

ENTITY_REF = re.compile(r"^(?P<type>[a-z][a-z_]{1,31}):(?P<name>[A-Za-z0-9][A-Za-z0-9_.\-]{0,63})$")


def entity_iri(ref: str) -> URIRef:
    """``airline:MU`` → ``https://memkg.dev/entity/airline/MU``.

    >>> str(entity_iri("condition:asthma"))
    'https://memkg.dev/entity/condition/asthma'
    """
    match = ENTITY_REF.match(ref)
    if match is None:
        raise ValueError(f"not an entity reference (type:name): {ref!r}")
    return URIRef(f"{ENTITY}{match['type']}/{match['name']}")


def entity_ref(iri: str) -> str | None:
    """The inverse of ``entity_iri``; None for IRIs outside the entity namespace."""
    if not iri.startswith(str(ENTITY)):
        return None
    kind, _, name = iri[len(ENTITY) :].partition("/")
    return f"{kind}:{name}" if kind and name else None


def key_iri(key: str) -> URIRef:
    return KEY[key]


def user_iri(user_id: str) -> URIRef:
    # quote so that ids with ':' or '@' stay a single path segment
    from urllib.parse import quote

    return URIRef(f"{USER}{quote(user_id, safe='')}")
