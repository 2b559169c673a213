"""The same condition semantics as the compiled rules, in Python, for rules that did *not* fire.

durable-rules tells which rules matched and on what; it cannot tell why a rule failed. For
``why_not`` this module walks a rule's conditions in order, joining as the compiled pattern
does, and reports the first condition nothing satisfies. A property test checks that it agrees
with durable-rules on whether each rule matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from memkg.rules.kinds.compare import WILDCARD, Resolve, day_number, lookup, minutes
from memkg.rules.kinds.context import context_prop
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import Condition, Ref, Rule

Env = dict[str, Item]
"""Alias → the item bound to it."""
_MAX_ENVS = 256


@dataclass(frozen=True)
class RuleCheck:
    """How far a rule got: ``failing`` is the first condition that failed (None: it matched)."""

    rule: Rule
    holds: tuple[bool, ...]
    """Whether each condition holds on its own (joins to other conditions not required)."""
    failing: int | None
    in_effect: bool = True
    example: Env | None = None

    @property
    def holding(self) -> int:
        return sum(self.holds)


def resolver(
    env: Env | None, ctx: dict[str, Any], aliases: Mapping[str, Condition] | None = None
) -> Resolve:
    """Operands as a join sees them: ``$context.field`` from the context, ``$alias[.field]``
    from the message bound to ``alias`` (``WILDCARD`` while unbound)."""

    def resolve(operand: Any) -> Any:
        if not isinstance(operand, Ref):
            return minutes(operand)
        if operand.alias == "context":
            return ctx.get(context_prop(operand.field or ""))
        if env is None or operand.alias not in env:
            return WILDCARD
        item = env[operand.alias]
        target = aliases.get(operand.alias) if aliases is not None else None
        if target is None:
            return item.value
        return lookup(item.props, target.handler.ref_prop(target, operand.field))

    return resolve


def item_satisfies(
    cond: Condition,
    item: Item,
    env: Env | None,
    ctx: dict[str, Any],
    aliases: Mapping[str, Condition] | None = None,
) -> bool:
    return cond.handler.matches(cond, item.props, resolver(env, ctx, aliases))


def holds_alone(cond: Condition, candidates: Sequence[Item], resolve: Resolve) -> bool:
    """Whether ``cond`` holds on its own over ``candidates`` (a negation: none satisfies it).

    ``resolve`` is ``resolver(None, ctx)``: nothing is bound, so one evaluation builds it
    once for all its conditions.
    """
    matches = cond.handler.matches
    return cond.negated != any(matches(cond, item.props, resolve) for item in candidates)


def in_effect(rule: Rule, today: int) -> bool:
    low = day_number(rule.effective_from) if rule.effective_from else 0
    high = day_number(rule.effective_until) if rule.effective_until else day_number(date.max)
    return low <= today <= high


Pools = dict[tuple[str, Any], list[Item]]
"""Items by (kind, key) for facts and edges, by ("path", to) for paths."""


def pools(items: Sequence[Item]) -> Pools:
    found: Pools = {}
    for item in items[:-1]:
        found.setdefault((item.kind, item.index), []).append(item)
    return found


def pool(cond: Condition, inp: DecisionInput, by_key: Pools) -> Sequence[Item]:
    kind = cond.handler
    if kind.on_context:
        return inp.items[-1:]
    return by_key.get((str(kind.message), kind.pool_key(cond)), ())


def holding(
    rule: Rule, inp: DecisionInput, by_key: Pools, memo: dict[tuple[Any, ...], bool]
) -> tuple[bool, ...]:
    """Whether each condition of ``rule`` holds on its own (joins to others not required)."""
    resolve: Resolve | None = None
    holds = []
    for cond in rule.conditions:
        signature = cond.signature
        found = memo.get(signature)
        if found is None:
            if resolve is None:
                resolve = resolver(None, inp.items[-1].props)
            found = memo[signature] = holds_alone(cond, pool(cond, inp, by_key), resolve)
        holds.append(found)
    return tuple(holds)


_UNJOINED_KINDS = frozenset({"context", "fact", "edge", "path"})
"""The built-in kinds, whose ``matches`` reads an operand only through ``resolve``."""


def unjoined(rule: Rule) -> bool:
    """Whether ``rule``'s walk can fail only where a condition fails on its own.

    So it is when no condition reads a binding or the context through an operand (``refs``)
    and no two conditions draw on the same pool of messages (every context test reads the
    one context message, which binds nothing): what satisfies a condition is then the same
    whatever the earlier conditions bound, and the walk stops at the first condition that
    holds for no message alone.
    """
    slots = set()
    for cond in rule.conditions:
        kind = cond.handler
        if cond.kind not in _UNJOINED_KINDS or cond.refs:
            return False
        if kind.on_context:
            continue
        slot = (str(kind.message), kind.pool_key(cond))
        if slot in slots:
            return False
        slots.add(slot)
    return True


def check_rule(
    rule: Rule,
    inp: DecisionInput,
    by_key: Pools,
    memo: dict[tuple[Any, ...], bool] | None = None,
    *,
    walk: bool = True,
    unjoined: bool = False,
) -> RuleCheck:
    """``memo`` shares condition results across the rules of one evaluation; ``walk=False``
    skips the joined walk (``failing`` stays None) when only ``holds`` is wanted;
    ``unjoined``: the caller found ``unjoined(rule)``, so a rule with a condition that fails
    on its own fails there, found without walking (a differential test keeps the two equal).
    """
    ctx = inp.items[-1].props
    memo = {} if memo is None else memo
    holds = holding(rule, inp, by_key, memo)
    if not walk:
        return RuleCheck(rule, holds, None, in_effect(rule, int(ctx["today"])))
    if unjoined and not all(holds):
        first = next(c.index for c, held in zip(rule.conditions, holds, strict=True) if not held)
        return RuleCheck(rule, holds, first, in_effect(rule, int(ctx["today"])))
    envs: list[Env] = [{}]
    failing = None
    aliases = {c.alias: c for c in rule.conditions if c.alias}
    alone = resolver(None, ctx)
    for cond in rule.conditions:
        candidates = pool(cond, inp, by_key)
        alias = cond.alias or f"#{cond.index}"
        nxt: list[Env] = []
        if cond.negated:  # decided once, over every message, as the evaluator's flag is
            if not holds_alone(cond, candidates, alone):
                failing = cond.index
                break
            continue
        satisfies = cond.handler.matches
        for env in envs:
            # durable-rules never binds one fact to two patterns (context tests share one)
            bound = {id(i) for i in env.values() if i.kind != "context"}
            resolve = resolver(env, ctx, aliases) if env else alone
            matches = [
                item
                for item in candidates
                if id(item) not in bound and satisfies(cond, item.props, resolve)
            ]
            nxt += [{**env, alias: item} for item in matches]
            if len(nxt) >= _MAX_ENVS:
                break
        if not nxt:
            failing = cond.index
            break
        envs = nxt
    effective = in_effect(rule, int(ctx["today"]))
    example = envs[0] if failing is None else None
    return RuleCheck(rule, holds, failing, effective, example)
