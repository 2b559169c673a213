"""The weighted view: a NetworkX graph of one user's live claims and the knowledge they touch.

Nodes are the user (its IRI), entities (their reference, ``airline:MU``) and literal values
(``value:<domain>/<key>=<json>``). Each live claim is one edge from the user, keyed by its fact
id, weighted by ``claim_weight`` at ``now`` with the signals on that edge; each knowledge edge
reachable from the user's entities is keyed by its relation and weighted by its ``mk:weight``.

An edge is *usable* at or above the threshold; it is *decidable* when it is usable and, for a
claim, its fact is active: a ``pending_confirmation`` fact (a ``fact`` from dialogue not yet
confirmed) or a frozen one is shown with its weight but decisions must not use it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import networkx as nx

from memkg.graph.claims import Target
from memkg.graph.projection import UserGraph
from memkg.graph.weights import WeightParams, claim_weight
from memkg.model.fact import FactStatus
from memkg.model.vocab import user_iri

View = Any
"""A ``networkx.MultiDiGraph`` (NetworkX ships no types)."""


def user_node(user_id: str) -> str:
    return str(user_iri(user_id))


def target_node(domain: str, key: str, target: Target) -> str:
    return target.value if target.entity else f"value:{domain}/{key}={target.value}"


def weighted_view(
    graph: UserGraph, now: datetime, params: WeightParams, domain: str | None = None
) -> View:
    """The user's claims (of ``domain``, or all domains) weighted as of ``now``."""
    view = nx.MultiDiGraph(user_id=graph.user_id, domain=domain, now=now,
                           threshold=params.threshold)  # fmt: skip
    user = user_node(graph.user_id)
    view.add_node(user, kind="user", ref=graph.user_id)
    entities = set()
    for fact, target in graph.claims(domain, now):
        node = target_node(fact.domain, fact.key, target)
        if target.entity:
            entities.add(target.value)
            view.add_node(node, kind="entity", ref=target.value,
                          type=graph.knowledge.entity_type(target.value),
                          label=graph.knowledge.label(target.value))  # fmt: skip
        else:
            view.add_node(node, kind="value", ref=target.value)
        signals = [s.as_signal() for s in graph.signals_for(fact, target)]
        weight = claim_weight(fact.confidence, fact.source.value, fact.observed_at, signals,
                              now, params)  # fmt: skip
        view.add_edge(
            user,
            node,
            key=fact.id,
            relation=fact.key,
            domain=fact.domain,
            fact_id=fact.id,
            status=fact.status.value,
            weight=weight.value,
            breakdown=weight,
            decidable=weight.usable and fact.status is FactStatus.ACTIVE,
        )
    for edge in graph.knowledge.reachable(entities):
        hop = params.knowledge_weight if edge.weight is None else edge.weight
        for ref in (edge.source, edge.target):
            if ref not in view:
                view.add_node(ref, kind="entity", ref=ref,
                              type=graph.knowledge.entity_type(ref),
                              label=graph.knowledge.label(ref))  # fmt: skip
        view.add_edge(
            edge.source,
            edge.target,
            key=edge.relation,
            relation=edge.relation,
            domain=None,
            fact_id=None,
            status=None,
            weight=hop,
            breakdown=None,
            decidable=hop >= params.threshold,
        )
    return view
