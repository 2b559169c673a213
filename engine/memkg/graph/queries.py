"""Typed queries over one user's graph: edges by relation and weight, paths to a concept,
recent entities of a session.

Every query reads one user's weighted view (``graph.view``), so it can only ever return that
user's nodes, of the domain the view was built for, and the knowledge they touch.

Paths include claims whose fact is not yet confirmed (``pending_confirmation``) or frozen, so
an agent can see what memory suggests and ask; such a hop, and any hop under the threshold, is
not *decidable*, and neither is a path containing one. Decisions pass ``decidable_only=True``.

A dense knowledge graph (every city near every other) has more simple paths of six hops than
any answer can hold: ``paths`` lists at most ``MAX_PATHS`` and looks at most at ``MAX_STEPS``
edges, and past either refuses (``graph.too_many_paths``) with what to narrow.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from memkg.errors import InvalidOperation
from memkg.graph.projection import UserGraph
from memkg.graph.view import View, breakdown, user_node
from memkg.model.evidence import path_weight
from memkg.model.fact import FactStatus
from memkg.model.weight import Weight

MAX_PATHS = 10_000
"""The most paths ``paths`` lists; a walk that finds more is refused."""
MAX_STEPS = 250_000
"""The most edges ``paths`` looks at (a tenth of a second or so) before it gives up."""


class Edge(BaseModel):
    """One claim ``user ─relation→ target`` with its weight and the breakdown of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    domain: str
    relation: str
    target: str
    """An entity reference (``airline:MU``), or ``value:<domain>/<key>=<json>``."""
    fact_id: str
    status: str
    weight: float
    usable: bool
    decidable: bool
    breakdown: Weight


class Hop(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    relation: str
    target: str
    weight: float
    decidable: bool
    fact_id: str | None = None
    """The claim behind a hop from the user; None for a domain-knowledge hop."""
    status: str | None = None
    breakdown: Weight | None = None


class GraphPath(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    hops: tuple[Hop, ...]
    weight: float
    """The weakest hop (``model.evidence.path_weight``), as decisions read it."""
    decidable: bool


class RecentEntity(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    type: str | None
    label: str | None
    at: datetime
    domain: str
    key: str
    fact_id: str | None
    event_id: str | None
    """The signal that mentioned it, when a signal was the latest sighting."""


def edges(
    view: View,
    relation: str | None = None,
    min_weight: float | None = None,
    *,
    decidable_only: bool = False,
    frozen: Collection[tuple[str, str]] = (),
) -> list[Edge]:
    """The user's claims, heaviest first; ``relation`` is a key (``airline.preferred``).
    ``frozen``: the (domain, key) a review holds frozen, whose claims decide nothing."""
    user_id = view.graph["user_id"]
    chosen = []
    for target, keys in view._succ[user_node(user_id)].items():
        for data in keys.values():
            if relation is not None and data["relation"] != relation:
                continue
            if min_weight is not None and data["weight"] < min_weight:
                continue
            if decidable_only and not _decidable(data, frozen):
                continue
            chosen.append((-data["weight"], data["relation"], target, data["fact_id"], data))
    chosen.sort(key=lambda c: c[:4])
    return [
        Edge(
            user_id=user_id,
            domain=data["domain"],
            relation=data["relation"],
            target=target,
            fact_id=data["fact_id"],
            status=data["status"],
            weight=data["weight"],
            usable=data["claim"].usable,
            decidable=_decidable(data, frozen),
            breakdown=breakdown(data),
        )
        for _, _, target, _, data in chosen
    ]


def _decidable(data: dict[str, Any], frozen: Collection[tuple[str, str]]) -> bool:
    """Whether an edge may decide: usable and active (``view``), and not a claim of a frozen
    key."""
    return bool(data["decidable"]) and (
        data["fact_id"] is None or (data["domain"], data["relation"]) not in frozen
    )


def paths(
    view: View, concept: str, max_depth: int = 3, *, decidable_only: bool = False,
    frozen: Collection[tuple[str, str]] = (),
) -> list[GraphPath]:  # fmt: skip
    """Every simple path from the user to ``concept`` of at most ``max_depth`` hops, or
    ``graph.too_many_paths`` when there are more than ``MAX_PATHS`` (or finding them would
    look at more than ``MAX_STEPS`` edges); ``frozen`` as for ``edges``."""
    user = user_node(view.graph["user_id"])
    if concept not in view or concept == user or max_depth < 1:
        return []
    found = []
    hops: dict[tuple[str, str, str], Hop] = {}
    walk = routes(view._succ, user, concept, max_depth, max_steps=MAX_STEPS, pred=view._pred)
    for count, route in enumerate(walk, 1):
        if count > MAX_PATHS:
            raise _too_many(f"more than {MAX_PATHS:,} paths lead from the user to "
                            f"{concept!r:.80} within {max_depth} hops")  # fmt: skip
        path = []
        for edge in route:
            hop = hops.get(edge)
            if hop is None:
                hop = hops[edge] = _hop(view, *edge, frozen)
            path.append(hop)
        decidable = all(h.decidable for h in path)
        if decidable_only and not decidable:
            continue
        weight = path_weight(h.weight for h in path)
        found.append(GraphPath(hops=tuple(path), weight=weight, decidable=decidable))
    return sorted(found, key=lambda p: (-p.weight, [(h.relation, h.target) for h in p.hops]))


def routes(
    succ: dict[str, Any], source: str, target: str, cutoff: int, *,
    max_steps: int | None = None, pred: dict[str, Any] | None = None,
) -> Iterator[list[tuple[str, str, str]]]:  # fmt: skip
    """``nx.all_simple_edge_paths(view, source, target, cutoff)``, in the same order.

    The same depth-first walk over the same adjacency dicts (the view's own, ``_succ``),
    without NetworkX's read-only wrappers around every step: ties between paths of equal
    weight keep their order, so results match hop for hop (a test checks it). It never steps
    onto a node from which ``target`` is farther than the hops left (``pred``, the view's
    predecessor map, tells; built from ``succ`` when not given): what it skips holds no
    route, so the order stays. With ``max_steps`` it refuses (``graph.too_many_paths``) once
    it has looked at that many edges.
    """
    near = _near(_predecessors(succ) if pred is None else pred, target, cutoff)
    if near.get(source, cutoff + 1) > cutoff:
        return
    route: list[tuple[str, str, str]] = []
    on_route = {source}
    left_to_look = max_steps

    def walk(node: str, depth: int) -> Iterator[list[tuple[str, str, str]]]:
        nonlocal left_to_look
        left = cutoff - depth  # hops left after this one
        for following, keys in succ[node].items():
            if left_to_look is not None:
                left_to_look -= len(keys)
                if left_to_look < 0:
                    raise _too_many(f"the paths to {target!r:.80} within {cutoff} hops are "
                                    f"too many to find (past {max_steps:,} edges looked "
                                    "at)")  # fmt: skip
            if following in on_route:
                continue
            if following != target and near.get(following, left + 1) > left:
                continue  # the target is out of reach from there
            for key in keys:
                route.append((node, following, key))
                if following == target:
                    yield list(route)
                else:
                    on_route.add(following)
                    yield from walk(following, depth + 1)
                    on_route.discard(following)
                route.pop()

    yield from walk(source, 1)


def _predecessors(succ: dict[str, Any]) -> dict[str, list[str]]:
    pred: dict[str, list[str]] = {}
    for node, following in succ.items():
        for after in following:
            pred.setdefault(after, []).append(node)
    return pred


def _near(pred: dict[str, Any], target: str, cutoff: int) -> dict[str, int]:
    """The hops from each node to ``target``, for the nodes at most ``cutoff`` hops away."""
    near = {target: 0}
    frontier = [target]
    hops = 0
    while frontier and hops < cutoff:
        hops += 1
        found = []
        for node in frontier:
            for before in pred.get(node, ()):
                if before not in near:
                    near[before] = hops
                    found.append(before)
        frontier = found
    return near


def _too_many(what: str) -> InvalidOperation:
    return InvalidOperation(
        f"{what}: lower max_depth, or name a domain so that fewer claims start a path",
        code="graph.too_many_paths",
    )


def _hop(
    view: View, source: str, target: str, key: str, frozen: Collection[tuple[str, str]] = ()
) -> Hop:
    data = view._succ[source][target][key]
    return Hop(
        source=view._node[source]["ref"],
        relation=data["relation"],
        target=target,
        weight=data["weight"],
        decidable=_decidable(data, frozen),
        fact_id=data["fact_id"],
        status=data["status"],
        breakdown=breakdown(data),
    )


def recent_entities(
    graph: UserGraph,
    entity_type: str,
    session_id: str,
    *,
    domain: str | None = None,
    limit: int = 10,
) -> list[RecentEntity]:
    """Entities of a type seen in a session, most recent first (resolves "the blue one").

    ``entity_type`` is a reference prefix (``product``) or a class (``Product``). A sighting
    is a fact of the session naming the entity, whatever became of it since (a product viewed,
    then replaced by the next one viewed, was still shown), except a retracted one, or a signal
    of the session about it.
    """
    latest: dict[str, tuple[datetime, int, RecentEntity]] = {}

    def seen(ref: str, seq: int, entry: RecentEntity) -> None:
        kind = graph.knowledge.entity_type(ref)
        if entity_type not in (ref.partition(":")[0], kind):
            return
        entry = entry.model_copy(update={"type": kind, "label": graph.knowledge.label(ref)})
        if ref not in latest or latest[ref][:2] < (entry.at, seq):
            latest[ref] = (entry.at, seq, entry)

    for fact in graph.memory.facts.values():
        if fact.session_id != session_id or fact.status is FactStatus.RETRACTED:
            continue
        if domain is not None and fact.domain != domain:
            continue
        for target in graph.targets(fact):
            if target.entity:
                seen(target.value, fact.seq, RecentEntity(
                    ref=target.value, type=None, label=None, at=fact.observed_at,
                    domain=fact.domain, key=fact.key, fact_id=fact.id, event_id=None))  # fmt: skip
    for signal in graph.signals:
        if signal.session_id == session_id and signal.entity and domain in (None, signal.domain):
            seen(signal.target, signal.seq, RecentEntity(
                ref=signal.target, type=None, label=None, at=signal.at, domain=signal.domain,
                key=signal.key, fact_id=None, event_id=signal.event_id))  # fmt: skip
    ranked = sorted(latest.values(), key=lambda item: item[:2], reverse=True)
    return [entry for _, _, entry in ranked[:limit]]
