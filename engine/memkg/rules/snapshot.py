"""The input of one evaluation: eligible facts, edges and paths, the context, and the clock.

``build_input`` takes what memory holds and keeps only what may take part in a decision:
active (so confirmed), unexpired, unfrozen facts of the keys the table reads, whose graph edge
(for entity values) is at or above the threshold. Everything else but superseded history is
listed in ``left_out`` with the reason. Graph edges and paths are read through the small
``GraphView`` protocol.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol

from memkg.clock import TIMEZONE, time_zone
from memkg.model.decision import LeftOut
from memkg.model.evidence import Edge, GraphPath
from memkg.model.fact import Fact, FactStatus
from memkg.rules.kinds.compare import day_number, minutes
from memkg.rules.reuse import Reuse
from memkg.rules.spec import RuleTable

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class GraphView(Protocol):
    """The user's contextual graph as one evaluation sees it (one user, one time)."""

    def user_edges(self, of_facts: Container[str] | None = None) -> list[Edge]:
        """Every edge from the user (one per entity a live fact points at), with weights;
        only those of the facts ``of_facts`` names when given."""
        ...

    def paths(
        self, to: str, via: str | None, of_facts: Container[str] | None = None
    ) -> list[GraphPath]:
        """Paths from the user to ``to`` (through ``via`` when given); only those whose every
        user hop is an edge of a fact ``of_facts`` names, when given."""
        ...


@dataclass(frozen=True)
class KeyVerdict:
    """What arbitration said about one key: frozen for review, or which claims lost."""

    frozen: bool = False
    lost: Mapping[str, str] = field(default_factory=dict)
    """Fact id → why its claim lost."""
    detail: str = ""
    held: frozenset[str] | None = None
    """The fact ids that hold for the key; None when arbitration did not run (rule cases)."""
    scope: str = ""
    """Why a fact outside ``held`` that neither lost nor is frozen takes no part."""


def message_index(props: Mapping[str, Any]) -> Any:
    """What a message is looked up by among those of its type: a path's target, else its key."""
    return props.get("to") if props.get("t") == "path" else props.get("key")


_SORT_TEXT = json.JSONEncoder(sort_keys=True, default=str)
"""An item's sort key is its content as this JSON (``json.dumps``'s encoder, built once)."""


@dataclass(frozen=True)
class Item:
    """One message for the matcher, and the evidence it stands for."""

    ref: str
    kind: str
    props: dict[str, Any]
    fact: Fact | None = None
    edge: Edge | None = None
    path: GraphPath | None = None

    @property
    def value(self) -> Any:
        """What a condition bound to this message binds: a fact's value, else the target."""
        return self.props.get("value") if self.kind == "fact" else self.props.get("to")

    @property
    def index(self) -> Any:
        return message_index(self.props)

    @cached_property
    def sort_key(self) -> str:
        """Content, not ids: the same evidence sorts the same whatever order it was written in."""
        return _SORT_TEXT.encode([self.kind, self.props])


@dataclass(frozen=True)
class DecisionInput:
    user_id: str
    domain: str
    now: datetime
    timezone: str
    context: dict[str, Any]
    """The request context plus ``local_time``, ``weekday`` and ``timezone``."""
    facts: tuple[Fact, ...]
    edges: tuple[Edge, ...]
    paths: tuple[GraphPath, ...]
    left_out: tuple[LeftOut, ...] = ()
    frozen_keys: tuple[str, ...] = ()
    items: tuple[Item, ...] = field(default=(), compare=False)
    read: tuple[str, ...] = ()
    """The ids of the facts the rules can read here, sorted: those of the keys they read, the
    user hops of the paths given them, the claims other claims were left out for (lost to,
    or out of the scope of), the facts the local time's time zone came from (the claims
    that hold for the ``timezone`` key)."""
    owner: object = field(default=None, compare=False, repr=False)
    """What holds the user's memory (the resident ``UserMemory``), when the input was read
    from one: what the evaluator keeps of this input without a fact to tie it to lives as
    long as it does (``Reuse``), so a write keeps it and an erasure or an eviction drops it."""

    @property
    def facts_by_id(self) -> dict[str, Fact]:
        return {f.id: f for f in self.facts}

    @property
    def ties(self) -> tuple[object, ...]:
        """What ``Reuse`` ties what it keeps of this input to when none of the input's own
        facts does (a node shown from the rule and the context alone, which rules nearly
        fired): the user's memory (``owner``), else every fact of the input; none, and
        nothing is kept."""
        return (self.owner,) if self.owner is not None else self.facts


def local_context(context: Mapping[str, Any], now: datetime, timezone: str) -> dict[str, Any]:
    zone = time_zone(timezone)
    local = now if zone is None else now.astimezone(zone)
    derived = {
        "local_time": local.strftime("%H:%M"),
        "weekday": WEEKDAYS[local.weekday()],
        "timezone": timezone,
        "today": day_number(local.date()),
    }
    return {**derived, **{k: v for k, v in context.items() if k not in derived}}


def _reason(fact: Fact, now: datetime) -> str | None:
    if fact.status is not FactStatus.ACTIVE:
        return fact.status.value
    if fact.valid_until is not None and fact.valid_until <= now:
        return "expired"
    return None


def build_input(
    table: RuleTable,
    user_id: str,
    facts: Sequence[Fact],
    context: Mapping[str, Any],
    now: datetime,
    graph: GraphView,
    *,
    keys: frozenset[str],
    verdicts: Mapping[str, KeyVerdict] | None = None,
    default_timezone: str = "UTC",
    wanted: Sequence[tuple[str, str | None]] | None = None,
    reuse: Reuse | None = None,
    owner: object = None,
    read_keys: frozenset[str] | None = None,
    held_back: frozenset[str] | None = None,
) -> DecisionInput:
    """Everything one evaluation of ``table`` may use; ``keys`` are the keys it reads, and
    ``wanted`` the (to, via) of its path conditions, sorted, when already known. ``reuse``
    keeps each fact's messages for the next input that holds the same fact; ``owner`` is
    what holds the user's memory (``DecisionInput.owner``); ``read_keys`` the keys the rules
    read among ``keys`` (all of them unless said: the rest only give the graph its edges);
    ``held_back`` the keys whose freeze holds the decision back (all of ``keys`` unless said:
    the keys its conditions read, and for path conditions every edge they may walk).

    The local clock is read in the time zone the context gives, else in the value of the
    ``timezone`` key its verdict holds (the arbitrated value in the decision's scope; a
    frozen key holds none), else in ``default_timezone``; with no verdict for the key
    (rule cases), in the last usable ``timezone`` fact."""
    verdicts = verdicts or {}
    left_out: list[LeftOut] = []
    eligible: dict[str, Fact] = {}
    frozen: set[str] = set()
    timezone = str(context.get("timezone") or default_timezone)
    zone = verdicts.get(TIMEZONE)
    timezone_facts: list[str] = []
    for fact in facts:
        if fact.domain != table.domain:
            continue
        if fact.key == TIMEZONE and "timezone" not in context and _reason(fact, now) is None:
            # the key's arbitrated value in this scope; without arbitration (rule cases),
            # the last usable fact
            if zone is None:
                timezone, timezone_facts = str(fact.value), [fact.id]
            elif zone.held is not None and fact.id in zone.held:
                timezone = str(fact.value)
                timezone_facts.append(fact.id)
        if fact.key not in keys or fact.status is FactStatus.SUPERSEDED:
            continue  # superseded: history, a newer claim of the same source replaced it
        verdict = verdicts.get(fact.key, KeyVerdict())
        reason, detail = _reason(fact, now), fact.status_reason or ""
        if reason is None and verdict.frozen:
            reason, detail = "frozen", verdict.detail or "conflicting claims await review"
        elif reason is None and fact.id in verdict.lost:
            reason, detail = "lost_arbitration", verdict.lost[fact.id]
        elif reason is None and verdict.held is not None and fact.id not in verdict.held:
            reason, detail = "out_of_scope", verdict.scope
        if reason is None:
            eligible[fact.id] = fact
            continue
        if reason == "frozen" and (held_back is None or fact.key in held_back):
            frozen.add(fact.key)
        left_out.append(
            LeftOut(
                kind="fact",
                ref=fact.id,
                key=fact.key,
                value=fact.value,
                reason=reason,
                detail=detail,
            )
        )
    # a key frozen for review holds the decision back whether or not a claim of it is left
    # (every one retracted or expired since the freeze: the review still waits)
    frozen.update(k for k, v in verdicts.items()
                  if v.frozen and k in (keys if held_back is None else held_back))  # fmt: skip
    edges: list[Edge] = []
    weak: set[tuple[str | None, str]] = set()
    # an edge of a fact that is not eligible takes no part and is not listed: not built
    for edge in graph.user_edges(eligible):
        if edge.fact_id not in eligible:
            continue
        if edge.usable:
            edges.append(edge)
            continue
        weak.add((edge.fact_id, edge.target))
        left_out.append(
            LeftOut(
                kind="edge",
                ref=edge.ref,
                key=edge.relation,
                value=edge.target,
                reason="below_threshold",
                detail=f"weight {edge.weight:.2f} is under the threshold",
            )
        )
    if wanted is None:
        wanted = sorted(
            {p for r in table.rules for c in r.conditions for p in c.handler.paths(c)},
            key=lambda pair: (pair[0], pair[1] or ""),
        )
    paths = tuple(
        p
        for to, via in wanted
        for p in graph.paths(to, via, eligible)
        if all(h.usable and (h.fact_id is None or h.fact_id in eligible) for h in p.hops)
    )
    ctx = local_context(context, now, timezone)
    items = _items(list(eligible.values()), weak, edges, paths, ctx, reuse)
    return DecisionInput(
        user_id=user_id,
        domain=table.domain,
        now=now,
        timezone=timezone,
        context=ctx,
        facts=tuple(eligible.values()),
        edges=tuple(edges),
        paths=paths,
        left_out=tuple(sorted(left_out, key=lambda x: (x.key, x.reason, x.ref))),
        frozen_keys=tuple(sorted(frozen)),
        items=items,
        read=_read(
            eligible.values(),
            paths,
            keys if read_keys is None else read_keys,
            left_out,
            timezone_facts,
        ),
        owner=owner,
    )


_ARBITRATED = frozenset({"lost_arbitration", "out_of_scope"})


def _read(
    facts: Iterable[Fact], paths: Sequence[GraphPath], keys: frozenset[str],
    left_out: Sequence[LeftOut], timezone: Iterable[str],
) -> tuple[str, ...]:  # fmt: skip
    """``DecisionInput.read``: a fact of a key no rule reads reaches the rules only as a hop of
    a path they are given, or as the claim another one was left out for (it lost to it, or
    was out of the scope it holds)."""
    beaten = {left.key for left in left_out if left.kind == "fact" and left.reason in _ARBITRATED}
    ids = {f.id for f in facts if f.key in keys or f.key in beaten}
    ids.update(h.fact_id for p in paths for h in p.hops if h.fact_id is not None)
    ids.update(timezone)
    return tuple(sorted(ids))


def _items(
    facts: Sequence[Fact],
    weak: set[tuple[str | None, str]],
    edges: Sequence[Edge],
    paths: Sequence[GraphPath],
    context: dict[str, Any],
    reuse: Reuse | None = None,
) -> tuple[Item, ...]:
    items: list[Item] = []
    for fact in facts:
        made = None if reuse is None else reuse.get(("items", id(fact)), (fact,))
        if made is None:
            made = _fact_messages(fact)
            if reuse is not None:
                reuse.put(("items", id(fact)), (fact,), made)
        for value, ref, props, sort_key in made:
            if not isinstance(value, str) or (fact.id, value) not in weak:
                item = Item(ref, "fact", props, fact)
                item.__dict__["sort_key"] = sort_key  # the cached property, already known
                items.append(item)
    for edge in edges:
        props = {"t": "edge", "key": edge.relation, "to": edge.target, "weight": edge.weight}
        items.append(Item(f"edge:{edge.ref}", "edge", props, edge=edge))
    for path in paths:
        props = {"t": "path", "to": path.to, "weight": path.weight}
        if path.via is not None:
            props["via"] = path.via
        items.append(Item(f"path:{path.ref}", "path", props, path=path))
    items.sort(key=lambda item: item.sort_key)
    ctx = {k: v for k, v in context.items() if v is not None}
    ctx["local_minutes"] = minutes(context["local_time"])
    items.append(Item("context", "context", {"t": "context", **ctx}))
    return tuple(items)


def _fact_messages(fact: Fact) -> tuple[tuple[Any, str, dict[str, Any], str], ...]:
    """A fact's messages, one per item of a list value: the value each carries, its ref,
    its properties and its sort key.

    Kept by ``Reuse`` while the fact lives: a fact is immutable and its messages are read,
    never changed. They hold no reference to the fact, so keeping them does not keep it.
    """
    base = {"t": "fact", "key": fact.key, "confidence": fact.confidence,
            "source": fact.source.value}  # fmt: skip
    refs = (
        [(f"fact:{fact.id}#{i}", v) for i, v in enumerate(fact.value)]
        if isinstance(fact.value, list)
        else [(f"fact:{fact.id}", fact.value)]
    )
    made = []
    for ref, value in refs:
        props = {**base, "value": value}
        made.append((value, ref, props, Item(ref, "fact", props).sort_key))
    return tuple(made)
