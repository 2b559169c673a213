"""The same condition semantics as the compiled rules, in Python, for rules that did *not* fire.

durable-rules tells which rules matched and on what; it cannot tell why a rule failed. For
``why_not`` this module walks a rule's conditions in order, joining as the compiled pattern
does, and reports the first condition nothing satisfies. A property test checks that it agrees
with durable-rules on whether each rule matches.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from memkg.rules.compiler import day_number, minutes
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import Condition, Ref, Rule, Test

Env = dict[str, Item]
"""Alias → the item bound to it."""
_MAX_ENVS = 256
_WILDCARD = object()
_ORDER = {"lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge}


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


def _lookup(props: dict[str, Any], prop: str) -> Any:
    value: Any = props
    for part in prop.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _resolve(operand: Any, env: Env | None, ctx: dict[str, Any]) -> Any:
    if not isinstance(operand, Ref):
        return minutes(operand)
    if operand.alias == "context":
        field = operand.field or ""
        return ctx.get("local_minutes") if field == "local_time" else ctx.get(field)
    if env is None or operand.alias not in env:
        return _WILDCARD
    item = env[operand.alias]
    if item.kind == "fact":
        return _lookup(item.props, f"value.{operand.field}" if operand.field else "value")
    return item.props.get("to")


def _compare(op: str, actual: Any, expected: Any) -> bool:
    if expected is _WILDCARD:
        return True
    if op in ("eq", "contains"):
        return bool(actual == expected) and isinstance(actual, bool) == isinstance(expected, bool)
    if op == "ne":
        return bool(actual != expected)
    numeric = (int, float)
    if not (isinstance(actual, numeric) and isinstance(expected, numeric)) and not (
        isinstance(actual, str) and isinstance(expected, str)
    ):
        return False
    return bool(_ORDER[op](actual, expected))


def passes(
    test: Test, props: dict[str, Any], prop: str, env: Env | None, ctx: dict[str, Any]
) -> bool:
    actual = _lookup(props, prop)
    if test.op == "exists":
        return (actual is not None) == bool(test.operand)
    if test.op in ("in", "not_in"):
        inside = actual in [minutes(v) for v in test.operand]
        return inside if test.op == "in" else actual is not None and not inside
    if test.op in ("between", "outside"):
        if not isinstance(actual, int | float):
            return False
        low, high = minutes(test.operand[0]), minutes(test.operand[1])
        inside = low <= actual < high if low <= high else (actual >= low or actual < high)
        return inside if test.op == "between" else not inside
    return _compare(test.op, actual, _resolve(test.operand, env, ctx))


def item_satisfies(cond: Condition, item: Item, env: Env | None, ctx: dict[str, Any]) -> bool:
    props = item.props
    if cond.kind == "context":
        return all(
            passes(t, props, "local_minutes" if t.field == "local_time" else str(t.field), env, ctx)
            for t in cond.tests
        )
    if props.get("key") != cond.key and cond.kind != "path":
        return False
    if cond.kind == "fact":
        base = f"value.{cond.field}" if cond.field else "value"
        if not all(
            passes(t, props, f"value.{t.field}" if t.field else base, env, ctx) for t in cond.tests
        ):
            return False
        if cond.min_confidence is not None and props["confidence"] < cond.min_confidence:
            return False
        return not cond.sources or props["source"] in cond.sources
    if cond.kind == "path" and (props.get("to") != cond.to or props.get("via") != cond.via):
        return False
    to = _resolve(cond.to, env, ctx) if cond.kind == "edge" and cond.to is not None else _WILDCARD
    if not _compare("eq", props.get("to"), to):
        return False
    return cond.min_weight is None or props["weight"] >= cond.min_weight


def in_effect(rule: Rule, today: int) -> bool:
    low = day_number(rule.effective_from) if rule.effective_from else 0
    high = day_number(rule.effective_until) if rule.effective_until else day_number(date.max)
    return low <= today <= high


Pools = dict[tuple[str, Any], list[Item]]
"""Items by (kind, key) for facts and edges, by ("path", to) for paths."""


def pools(items: Sequence[Item]) -> Pools:
    found: Pools = {}
    for item in items[:-1]:
        key = item.props["to"] if item.kind == "path" else item.props["key"]
        found.setdefault((item.kind, key), []).append(item)
    return found


def pool(cond: Condition, inp: DecisionInput, by_key: Pools) -> Sequence[Item]:
    if cond.kind == "context":
        return inp.items[-1:]
    return by_key.get((cond.kind, cond.to if cond.kind == "path" else cond.key), ())


def holding(
    rule: Rule, inp: DecisionInput, by_key: Pools, memo: dict[tuple[Any, ...], bool]
) -> tuple[bool, ...]:
    """Whether each condition of ``rule`` holds on its own (joins to others not required)."""
    ctx = inp.items[-1].props
    holds = []
    for cond in rule.conditions:
        signature = cond.signature
        found = memo.get(signature)
        if found is None:
            candidates = pool(cond, inp, by_key)
            found = memo[signature] = cond.negated != any(
                item_satisfies(cond, item, None, ctx) for item in candidates
            )
        holds.append(found)
    return tuple(holds)


def check_rule(
    rule: Rule,
    inp: DecisionInput,
    by_key: Pools,
    memo: dict[tuple[Any, ...], bool] | None = None,
    *,
    walk: bool = True,
) -> RuleCheck:
    """``memo`` shares condition results across the rules of one evaluation; ``walk=False``
    skips the joined walk (``failing`` stays None) when only ``holds`` is wanted."""
    ctx = inp.items[-1].props
    memo = {} if memo is None else memo
    holds = holding(rule, inp, by_key, memo)
    if not walk:
        return RuleCheck(rule, holds, None, in_effect(rule, int(ctx["today"])))
    envs: list[Env] = [{}]
    failing = None
    for cond in rule.conditions:
        candidates = pool(cond, inp, by_key)
        alias = cond.alias or f"#{cond.index}"
        nxt: list[Env] = []
        for env in envs:
            # durable-rules never binds one fact to two patterns (context tests share one)
            bound = {id(i) for i in env.values() if i.kind != "context"}
            matches = [
                item
                for item in candidates
                if id(item) not in bound and item_satisfies(cond, item, env, ctx)
            ]
            if cond.negated:
                if not matches:
                    nxt.append(env)
            else:
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
