"""The contextual graph and memory arbitration, as the rules read them (engine-side wiring).

``WeightedGraphView`` adapts one user's weighted view (``memkg.graph``) to the rules'
``GraphView``: user edges with their weight breakdown, and paths to a concept. A path's
weight for a rule is its weakest hop: every hop must carry the decision, as an edge must.
``verdicts`` turns ``memkg.arbitration`` resolutions into what the rules need: frozen keys,
and the claims that lost.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memkg.arbitration import Outcome, Resolution, Standing, Step
from memkg.arbitration.review import Review
from memkg.arbitration.support import review_claim
from memkg.events.projection import UserMemory
from memkg.events.stored import Shape
from memkg.graph import queries
from memkg.graph.claims import EntityKeys
from memkg.graph.knowledge import Knowledge
from memkg.graph.projection import UserGraph
from memkg.graph.view import user_node, weighted_view
from memkg.model.evidence import Edge, GraphPath, WeightFactor, path_weight
from memkg.model.explanation import MemoryClaimNode, MemoryNode
from memkg.model.fact import Fact
from memkg.model.keyspec import KeySpec
from memkg.model.weight import ClaimWeight, Weight, WeightParams
from memkg.rules.snapshot import KeyVerdict

Override = Mapping[str, Any]
"""A case's graph fixture: ``{key, to, weight}`` for a user edge, ``{from, relation, to,
weight}`` for a knowledge edge."""


def _factors(weight: Weight | None) -> tuple[WeightFactor, ...]:
    if weight is None:
        return ()
    return tuple(
        WeightFactor(name=f.name, value=f.value, detail=f.detail, event_id=f.event_id)
        for f in weight.factors
    )


class WeightedGraphView:
    """One user's graph at one time, for one domain; fixtures may replace edge weights."""

    def __init__(
        self,
        graph: UserGraph,
        now: datetime,
        params: WeightParams,
        domain: str,
        overrides: Sequence[Override] = (),
        *,
        keys: Iterable[str] | None = None,
        session_id: str | None = None,
    ) -> None:
        """``keys``: only the claims of these keys that a read in ``session_id``'s session
        (or outside every session) can weigh (``UserGraph.claims_in``), which are all a
        decision reading them can use; default: every live claim of the domain."""
        claims = None if keys is None else graph.claims_in(domain, sorted(keys), session_id)
        self._view = weighted_view(graph, now, params, domain, claims)
        self._node = user_node(graph.user_id)
        self._user = f"user:{graph.user_id}"
        self._threshold = params.threshold
        self._overrides = list(overrides)
        self._weighed: dict[str, tuple[ClaimWeight, Weight]] = {}
        self._shown: dict[int, tuple[Weight, tuple[WeightFactor, ...]]] = {}

    def _override(self, source: str, relation: str, target: str, weight: float) -> float:
        for o in self._overrides:
            user_edge = "key" in o and source == self._user and o["key"] == relation
            knowledge = o.get("from") == source and o.get("relation", relation) == relation
            if (user_edge or knowledge) and o["to"] == target:
                return float(o["weight"])
        return weight

    def _breakdown(self, fact_id: str, claim: ClaimWeight) -> Weight:
        """``claim``'s breakdown; the edges of one fact weighed from the same inputs (the
        items of a list value) share one."""
        seen = self._weighed.get(fact_id)
        if seen is not None and seen[0].shares_inputs(claim):
            return seen[1]
        weight = claim.breakdown
        self._weighed[fact_id] = (claim, weight)
        return weight

    def _factors(self, weight: Weight | None) -> tuple[WeightFactor, ...]:
        """``weight``'s factors as an edge shows them, built once per breakdown."""
        if weight is None:
            return ()
        found = self._shown.get(id(weight))
        if found is None:
            found = self._shown[id(weight)] = (weight, _factors(weight))  # held: ids stay apart
        return found[1]

    def user_edges(self, of_facts: Container[str] | None = None) -> list[Edge]:
        """Edges to entities; literal values (``child.age`` 3) are facts, not graph edges.

        Read from the view's adjacency rather than ``queries.edges``, so only entity edges get
        their weight breakdown built (the view builds it on first request, once per edge);
        with ``of_facts``, only the edges of those facts are built (a decision has no use for
        the edge of a claim that lost or is not live).
        """
        found = []
        for target, keys in self._view._succ[self._node].items():
            if target.startswith("value:"):
                continue
            for data in keys.values():
                relation, fact_id, claim = data["relation"], data["fact_id"], data["claim"]
                if of_facts is not None and fact_id not in of_facts:
                    continue
                weight = self._override(self._user, relation, target, data["weight"])
                shown = weight == data["weight"]
                breakdown = self._breakdown(fact_id, claim)
                found.append(
                    Edge(
                        ref=f"{fact_id}>{target}",
                        source=self._user,
                        relation=relation,
                        target=target,
                        weight=weight,
                        base=breakdown.base,
                        factors=self._factors(breakdown)
                        if shown
                        else (
                            WeightFactor(name="fixture", value=weight, detail="set by a rule case"),
                        ),
                        fact_id=fact_id,
                        usable=weight >= self._threshold,
                    )
                )
        return sorted(found, key=lambda e: e.ref)

    def paths(
        self, to: str, via: str | None, of_facts: Container[str] | None = None
    ) -> list[GraphPath]:
        """Paths to ``to`` (through ``via``); with ``of_facts``, only those whose user hops
        are all edges of those facts get built.

        The routes are ``queries.paths``' own walk (``queries.routes``); each hop is built
        once, straight from the view's edge, and a route left out is never built. The order is
        the paths' refs, which tell every route apart.
        """
        view, user = self._view, self._node
        if to not in view or to == user:
            return []  # as ``queries.paths``
        succ, nodes = view._succ, view.nodes
        built: dict[tuple[str, str, str], Edge] = {}
        found = []
        for route in queries.routes(succ, user, to, 3, pred=view._pred):
            if via is not None and via not in [target for _, target, _ in route[:-1]]:
                continue
            if of_facts is not None and any(
                (fact_id := succ[s][t][k]["fact_id"]) is not None and fact_id not in of_facts
                for s, t, k in route
            ):
                continue
            hops = []
            for edge in route:
                hop = built.get(edge)
                if hop is None:
                    hop = built[edge] = self._hop(nodes, succ, *edge)
                hops.append(hop)
            found.append(
                GraphPath(
                    ref="|".join(h.ref for h in hops),
                    to=to,
                    via=via,
                    weight=path_weight(h.weight for h in hops),
                    hops=tuple(hops),
                )
            )
        return sorted(found, key=lambda p: p.ref)

    def _hop(
        self, nodes: Mapping[str, Any], succ: dict[str, Any], source: str, target: str, key: str
    ) -> Edge:
        """One hop of a path, as an edge: a user hop from the user, a knowledge hop from its
        entity (``queries.paths``' hop, then its fixture weight)."""
        data = succ[source][target][key]
        fact_id, relation, shown = data["fact_id"], data["relation"], float(data["weight"])
        claim: ClaimWeight | None = data["claim"]
        breakdown = None if claim is None else claim.breakdown
        origin = self._user if fact_id is not None else nodes[source]["ref"]
        weight = self._override(origin, relation, target, shown)
        return Edge(
            ref=f"{fact_id or nodes[source]['ref']}>{relation}>{target}",
            source=origin,
            relation=relation,
            target=target,
            weight=weight,
            base=breakdown.base if breakdown else None,
            factors=self._factors(breakdown) if weight == shown else (),
            fact_id=fact_id,
            usable=weight >= self._threshold,
        )


def fixture_graph(
    user_id: str, facts: Sequence[Fact], knowledge: Knowledge, entity_keys: EntityKeys
) -> UserGraph:
    """A graph over given facts (rule cases): no log, no signals."""
    memory = UserMemory(user_id)
    memory.facts = {f.id: f for f in facts}
    return UserGraph(memory, knowledge, entity_keys)


def verdicts(
    resolutions: Sequence[Resolution], reviewed: Sequence[Fact] = (),
    freeze_above: float | None = None,
) -> dict[str, KeyVerdict]:  # fmt: skip
    """Key → what arbitration said: frozen, the claims that lost, the claims that hold (and
    the value a review settled the key on, ``reviewed_facts``, which no stored claim may
    carry).

    A key adopted provisionally over a conflict stronger than ``freeze_above`` (the domain's
    freeze band) holds the decision back as a frozen one does: only a session's or a turn's
    claims are read so (the user is there to be asked, so nothing is queued for a reviewer),
    and no action is built on a conflict that strong; the detail says what to ask.

    One resolution per key (the request's slot). Facts of the key that took no part in it
    (a turn or session claim outside its turn or session, another context slot) are held to
    be out of scope.
    """
    settled = {f.key: f.id for f in reviewed}
    found: dict[str, KeyVerdict] = {}
    for r in resolutions:
        lost = {c.fact_id: c.reason for c in r.claims if c.standing is Standing.LOST}
        frozen = r.outcome is Outcome.FROZEN
        detail = r.reason
        if _ask_first(r, freeze_above):
            frozen = True
            asked = f": ask the user: {r.question.text}" if r.question is not None else ""
            detail = (f"conflicting claims of this session, strength {r.strength} (above "
                      f"{freeze_above}){asked}")  # fmt: skip
        held = frozenset(c.fact_id for c in r.claims if c.standing is Standing.WON)
        if r.key in settled and not held:  # a value no claim that won carries
            held = frozenset({settled[r.key]})
        found[r.key] = KeyVerdict(
            frozen=frozen,
            lost=lost,
            detail=detail if frozen else "",
            held=frozenset() if frozen else held,
            scope=_scope(r),
        )
    return found


def _ask_first(r: Resolution, freeze_above: float | None) -> bool:
    """Adopted provisionally over a conflict above the freeze band (a session's or a turn's
    claims): a decision asks before it acts on it."""
    return (freeze_above is not None and r.outcome is Outcome.PROVISIONAL
            and r.question is not None and r.question.purpose == "conflict"
            and r.strength > freeze_above)  # fmt: skip


def _scope(r: Resolution) -> str:
    where = ", ".join(f"{k}={v}" for k, v in sorted(r.context.items()))
    slot = f"the {where} slot" if where else "the general slot"
    return f"takes no part in {slot} for this session and turn (scope or context)"


def reviewed_facts(
    resolutions: Sequence[Resolution],
    reviews: Sequence[Review],
    spec: Callable[[str, str], KeySpec | None],
) -> list[Fact]:
    """The reviewer's value, as a fact, where it is what holds for a key (a review settles a
    key with a value no stored claim may carry): not where a stored claim that holds carries
    it, which is then what the rules use (the value is not counted, or listed, twice)."""
    by_id = {r.review_id: r for r in reviews}
    found = []
    for r in resolutions:
        review = by_id.get(r.review_id or "")
        key_spec = spec(r.domain, r.key)
        if review is None or key_spec is None or r.outcome is Outcome.FROZEN:
            continue
        claim = review_claim(review, key_spec)
        won = {c.fact_id for c in r.claims if c.standing is Standing.WON}
        settled = r.step is Step.REVIEW_RESOLUTION and r.value is not None and not won
        if claim.fact.id in won or settled:
            found.append(claim.fact)
    return found


_NODES: Shape[MemoryNode] = Shape(MemoryNode, {})
_NODE_FIELDS = _NODES.fields_set(_NODES.names)
_CLAIMS: Shape[MemoryClaimNode] = Shape(MemoryClaimNode, {})
_CLAIM_FIELDS = _CLAIMS.fields_set(_CLAIMS.names)


def memory_nodes(resolutions: Sequence[Resolution]) -> tuple[MemoryNode, ...]:
    """The arbitration record of each key a decision read, for its explanation.

    Every field is set, from a resolution's fields, which its model validated: each value is
    already of the type the node's field holds (text for the enums, a float score, a new
    dict for the context), so the nodes are built as validation would build them, without
    running it (``Shape.build``; a test holds them equal to validated nodes, field types
    included)."""
    found = []
    for r in sorted(resolutions, key=lambda r: (r.key, sorted(r.context.items()))):
        if not r.claims and r.step.value != "role_default" and r.outcome is not Outcome.FROZEN:
            continue  # a key without claims says nothing, unless a review holds it frozen
        claims = []
        for c in r.claims:
            values = _CLAIMS.template.copy()
            values.update(fact_id=c.fact_id, value=c.value, source=c.source.value,
                          scope=c.scope.value, score=c.score, standing=c.standing.value,
                          reason=c.reason)  # fmt: skip
            claims.append(_CLAIMS.build(values, _CLAIM_FIELDS))
        values = _NODES.template.copy()
        values.update(
            key=r.key, context=dict(r.context), value=r.value, outcome=r.outcome.value,
            step=r.step.value, reason=r.reason, strength=r.strength, claims=tuple(claims),
            stale=tuple(f"{f.source.value} {f.value!r}: {f.detail}" for f in r.stale),
            question=r.question.text if r.question else None,
        )  # fmt: skip
        found.append(_NODES.build(values, _NODE_FIELDS))
    return tuple(found)
