"""The weighted view: a NetworkX graph of one user's live claims and the knowledge they touch.

Nodes are the user (its IRI), entities (their reference, ``airline:MU``) and literal values
(``value:<domain>/<key>=<json>``). Each live claim is one edge from the user, keyed by its fact
id, weighted by ``claim_weight`` at ``now`` with the signals on that edge; each knowledge edge
reachable from the user's entities is keyed by its relation and weighted by its ``mk:weight``.

Edge attributes: ``relation``, ``domain``, ``fact_id``, ``status``, ``weight``, ``decidable``
and ``claim``, the claim's ``ClaimWeight`` (None for knowledge): ``breakdown(data)`` gives the
``Weight`` with its factors, built only when asked for.

An edge is *usable* at or above the threshold; it is *decidable* when it is usable and, for a
claim, its fact is active: a ``pending_confirmation`` fact (a ``fact`` from dialogue not yet
confirmed) or a frozen one is shown with its weight but decisions must not use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import networkx as nx

from memkg.graph.claims import Target
from memkg.graph.knowledge import Knowledge
from memkg.graph.projection import Claim, UserGraph
from memkg.model.vocab import user_iri
from memkg.model.weight import ClaimWeight, Weight, WeightParams

View = Any
"""A ``networkx.MultiDiGraph`` (NetworkX ships no types)."""


def user_node(user_id: str) -> str:
    return str(user_iri(user_id))


def target_node(domain: str, key: str, target: Target) -> str:
    return target.value if target.entity else f"value:{domain}/{key}={target.value}"


def weighted_view(
    graph: UserGraph, now: datetime, params: WeightParams, domain: str | None = None,
    claims: Iterable[Claim] | None = None,
) -> View:  # fmt: skip
    """The user's claims (of ``domain``, or all domains; or ``claims``, some of them) weighted
    as of ``now``; a new graph."""
    view = nx.MultiDiGraph(user_id=graph.user_id, domain=domain, now=now,
                           threshold=params.threshold)  # fmt: skip
    # The graph is filled through NetworkX's own dicts (``_node``, ``_succ``, ``_pred``), as
    # ``add_node``/``add_edge`` would fill them and in the same order, at a quarter of the cost;
    # tests check it equals a graph built through the public calls.
    nodes, succ, pred = view._node, view._succ, view._pred
    user = user_node(graph.user_id)
    _node(nodes, succ, pred, user, {"kind": "user", "ref": graph.user_id})
    knowledge = graph.knowledge
    threshold = params.threshold
    weigh = ClaimWeight
    entities: dict[str, None] = {}
    for claim in graph.claims_of(domain) if claims is None else claims:
        fact, target = claim.fact, claim.target
        if fact.valid_until is not None and fact.valid_until <= now:
            continue
        if target.entity:
            node = ref = target.value
            if ref not in entities:
                entities[ref] = None
                _node(nodes, succ, pred, node, _entity(knowledge, ref))
        else:
            node = f"value:{fact.domain}/{fact.key}={target.value}"
            _node(nodes, succ, pred, node, {"kind": "value", "ref": target.value})
        weight = weigh(fact.confidence, claim.source, fact.observed_at, claim.signals, now, params)
        _edge(succ, pred, user, node, fact.id, {
            "relation": fact.key, "domain": fact.domain, "fact_id": fact.id,
            "status": claim.status, "weight": weight.value, "claim": weight,
            "decidable": weight.usable and claim.active})  # fmt: skip
    for edge in knowledge.reach(entities):
        hop = params.knowledge_weight if edge.weight is None else edge.weight
        for ref in (edge.source, edge.target):
            if ref not in nodes:
                _node(nodes, succ, pred, ref, _entity(knowledge, ref))
        _edge(succ, pred, edge.source, edge.target, edge.relation, {
            "relation": edge.relation, "domain": None, "fact_id": None, "status": None,
            "weight": hop, "claim": None, "decidable": hop >= threshold})  # fmt: skip
    return view


def breakdown(data: dict[str, Any]) -> Weight | None:
    """The weight breakdown of a view edge (built on first request); None for knowledge."""
    claim: ClaimWeight | None = data["claim"]
    return None if claim is None else claim.breakdown


def _entity(knowledge: Knowledge, ref: str) -> dict[str, Any]:
    return {"kind": "entity", "ref": ref, "type": knowledge.entity_type(ref),
            "label": knowledge.label(ref)}  # fmt: skip


def _node(nodes: dict[str, Any], succ: dict[str, Any], pred: dict[str, Any], node: str,
          attrs: dict[str, Any]) -> None:  # fmt: skip
    """``add_node(node, **attrs)``."""
    if node in nodes:
        nodes[node].update(attrs)
    else:
        nodes[node], succ[node], pred[node] = attrs, {}, {}


def _edge(succ: dict[str, Any], pred: dict[str, Any], source: str, target: str, key: str,
          data: dict[str, Any]) -> None:  # fmt: skip
    """``add_edge(source, target, key=key, **data)`` between two nodes already present."""
    keys = succ[source].get(target)
    if keys is None:
        keys = succ[source][target] = pred[target][source] = {}
    if key in keys:
        keys[key].update(data)
    else:
        keys[key] = data
