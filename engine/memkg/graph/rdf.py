"""The RDF form of facts and signals: the triples one fact or signal puts in its user's graph.

A fact is a node ``fact:<id>`` (an ``mk:Fact``, a ``prov:Entity``) carrying its key, value,
kind, source, confidence, times, status and provenance; ``mk:object`` points at each entity it
names, ``mk:literalValue`` holds any other value as JSON. While the fact is live, the graph
also holds the direct edge ``user ─key:<key>→ entity``: the fact node is that edge's
annotation (reification without RDF-star: the node says subject, key and object).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from urllib.parse import quote

from rdflib import RDF, XSD, Literal, URIRef
from rdflib.term import Node

from memkg.graph.claims import Target, canonical
from memkg.graph.signals import SignalRecord
from memkg.model.fact import Fact
from memkg.model.vocab import FACT, GRAPH, KEY, MK, SIGNAL, user_iri

Triple = tuple[Node, Node, Node]

KNOWLEDGE_GRAPH = GRAPH["knowledge"]


def graph_iri(user_id: str, domain: str) -> URIRef:
    """The named graph of one user and domain."""
    return GRAPH[f"user/{quote(user_id, safe='')}/{domain}"]


def fact_iri(fact_id: str) -> URIRef:
    return FACT[quote(fact_id, safe="")]


def decimal(value: float) -> Literal:
    return Literal(Decimal(repr(value)), datatype=XSD.decimal)


def _time(value: datetime) -> Literal:
    return Literal(value, datatype=XSD.dateTime)


def fact_triples(fact: Fact, fact_targets: tuple[Target, ...]) -> Iterator[Triple]:
    """Every triple of a fact node but its status (which changes)."""
    node, user = fact_iri(fact.id), user_iri(fact.user_id)
    yield user, RDF.type, MK.User
    yield node, RDF.type, MK.Fact
    yield node, MK.factId, Literal(fact.id)
    yield node, MK.subject, user
    yield node, MK.domain, Literal(fact.domain)
    yield node, MK.key, Literal(fact.key)
    yield node, MK.kind, MK[fact.kind.value]
    yield node, MK.source, MK[fact.source.value]
    yield node, MK.confidence, decimal(fact.confidence)
    yield node, MK.scope, MK[fact.scope.value]
    yield node, MK.observedAt, _time(fact.observed_at)
    yield node, MK.recordedAt, _time(fact.recorded_at)
    yield node, MK.sensitivity, MK[fact.sensitivity.value]
    yield node, MK.schemaVersion, Literal(fact.schema_version)
    yield node, MK.consentGranted, Literal(fact.provenance.consent_granted)
    optional: list[tuple[URIRef, Literal | None]] = [
        (MK.sessionId, _opt(fact.session_id)),
        (MK.validUntil, _time(fact.valid_until) if fact.valid_until else None),
        (MK.sourceRef, _opt(fact.provenance.source_ref)),
        (MK.consentVersion, _opt(fact.provenance.consent_version)),
        (MK.auditLogId, _opt(fact.provenance.audit_log_id)),
        (MK.purpose, _opt(fact.provenance.purpose)),
    ]
    for prop, literal in optional:
        if literal is not None:
            yield node, prop, literal
    for target in fact_targets:
        if target.entity:
            yield node, MK.object, target.iri
    if not any(t.entity for t in fact_targets):
        yield node, MK.literalValue, Literal(canonical(fact.value))


def status_triple(fact: Fact) -> Triple:
    return fact_iri(fact.id), MK.status, MK[fact.status.value]


def edge_triple(user_id: str, key: str, target: Target) -> Triple:
    return user_iri(user_id), KEY[key], target.iri


def signal_triples(user_id: str, signal: SignalRecord) -> Iterator[Triple]:
    node = SIGNAL[quote(signal.event_id, safe="")]
    yield node, RDF.type, MK.Signal
    yield node, MK.subject, user_iri(user_id)
    yield node, MK.domain, Literal(signal.domain)
    yield node, MK.key, Literal(signal.key)
    yield node, MK.signalKind, MK[signal.kind]
    yield node, MK.observedAt, _time(signal.at)
    if signal.entity:
        yield node, MK.object, Target(signal.target, entity=True).iri
    else:
        yield node, MK.literalValue, Literal(signal.target)
    if signal.session_id is not None:
        yield node, MK.sessionId, Literal(signal.session_id)


def _opt(value: str | None) -> Literal | None:
    return None if value is None else Literal(value)
