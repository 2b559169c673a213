"""Compiles a rule table to a durable-rules ruleset definition (JSON), and evidence to messages.

Each rule becomes ``r<index>`` with an ``all`` of patterns: ``ctx`` (the request context,
always first, so joins can read it; effective dates and negations are tested on it too), then
``c<i>`` for condition ``i``. Messages carry ``t`` (``fact``, ``edge``,
``path``, ``context``); a list-valued fact becomes one message per item, so ``contains`` is
an equality and the explanation can name the item.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from memkg.rules.spec import Condition, Ref, Rule, RuleTable, Test

_OPS = {"ne": "$neq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}


def minutes(value: Any) -> Any:
    """``"22:15"`` → 1335; anything else unchanged (numbers compare as they are)."""
    if isinstance(value, str) and len(value) == 5 and value[2] == ":":
        hours, mins = value.split(":")
        if hours.isdigit() and mins.isdigit():
            return int(hours) * 60 + int(mins)
    return value


def day_number(day: date) -> int:
    return day.year * 10_000 + day.month * 100 + day.day


def ruleset_name(table: RuleTable) -> str:
    return f"{table.domain}.{table.name}"


def rule_name(rule: Rule) -> str:
    return f"r{rule.index}"


def pattern_alias(cond: Condition) -> str:
    return f"c{cond.index}"


SINK = "sink"
"""A rule that takes in every message and never fires.

durable-rules reports a batch in which any message matched no pattern as not handled, and then
runs no action at all, even for rules the other messages completed; with every message taken
in, the batch always counts as handled.
"""


DONE = "done"
"""A rule that fires on the context message of every evaluation.

Deleting a session in which no action ran crashed the C core in every probe run; with this
rule every session runs one, and its firing also proves the batch was processed to the end.
"""


def negation_flag(rule: Rule, cond: Condition) -> str:
    """The context property that says condition ``cond`` (a ``not``) of ``rule`` holds.

    Negations are decided before matching (``memkg.rules.matcher``), never by durable-rules'
    own ``$not``: deleting a session in which a ``$not`` pattern was blocked by a fact
    segfaulted in 17 to 19 of 20 runs in our probes.
    """
    return f"not_{rule.index}_{cond.index}"


def compile_table(table: RuleTable) -> dict[str, Any]:
    """The durable-rules definition of ``table``; pass a copy to ``set_rulesets``."""
    rules = {rule_name(rule): compile_rule(rule) for rule in table.rules}
    kinds = [{"t": kind} for kind in ("fact", "edge", "path", "context")]
    rules[SINK] = {"all": [{"m": {"$or": kinds}}, {"never": {"t": "never"}}], "run": SINK}
    rules[DONE] = {"all": [{"m": {"t": "context"}}], "run": DONE}
    return rules


def compile_rule(rule: Rule) -> dict[str, Any]:
    aliases = {c.alias: c for c in rule.conditions if c.alias}
    ctx: list[Any] = [{"t": "context"}]
    if rule.effective_from:
        ctx.append({"$gte": {"today": day_number(rule.effective_from)}})
    if rule.effective_until:
        ctx.append({"$lte": {"today": day_number(rule.effective_until)}})
    patterns: list[dict[str, Any]] = [{"ctx": {"$and": ctx}}]
    for cond in rule.conditions:
        if cond.kind == "context":
            ctx += [_test(t, _context_prop(t.field or ""), aliases) for t in cond.tests]
            continue
        if cond.negated:
            ctx.append({negation_flag(rule, cond): 1})
            continue
        patterns.append({pattern_alias(cond): {"$and": _pattern(cond, aliases)}})
    return {"all": patterns, "run": rule_name(rule)}


def _pattern(cond: Condition, aliases: dict[str, Condition]) -> list[Any]:
    parts: list[Any] = [{"t": cond.kind}]
    if cond.key is not None:
        parts.append({"key": cond.key})
    if cond.kind == "fact":
        prop = f"value.{cond.field}" if cond.field else "value"
        parts += [_test(t, f"value.{t.field}" if t.field else prop, aliases) for t in cond.tests]
        if cond.min_confidence is not None:
            parts.append({"$gte": {"confidence": cond.min_confidence}})
        if cond.sources:
            parts.append(_any_of("source", cond.sources))
    else:
        if cond.to is not None:
            parts.append({"to": _operand(cond.to, aliases)})
        if cond.via is not None:
            parts.append({"via": cond.via})
        if cond.min_weight is not None:
            parts.append({"$gte": {"weight": cond.min_weight}})
    return parts


def _context_prop(field: str) -> str:
    return "local_minutes" if field == "local_time" else field


def _operand(value: Any, aliases: dict[str, Condition]) -> Any:
    if not isinstance(value, Ref):
        return minutes(value)
    if value.alias == "context":
        return {"ctx": _context_prop(value.field or "")}
    target = aliases[value.alias]
    if target.kind == "fact":
        field = value.field or target.field
        return {pattern_alias(target): f"value.{field}" if field else "value"}
    return {pattern_alias(target): "to"}


def _any_of(prop: str, values: Any) -> dict[str, Any]:
    options = [{prop: minutes(v)} for v in values]
    return options[0] if len(options) == 1 else {"$or": options}


def _window(prop: str, low: Any, high: Any, inside: bool) -> dict[str, Any]:
    """``inside``: low ≤ x < high (wrapping past midnight when low > high); else the rest."""
    low, high = minutes(low), minutes(high)
    wraps = low > high
    if inside != wraps:
        return (
            {"$and": [{"$gte": {prop: low}}, {"$lt": {prop: high}}]}
            if inside
            else {"$and": [{"$gte": {prop: high}}, {"$lt": {prop: low}}]}
        )
    if inside:  # wrapping window: x ≥ low or x < high
        return {"$or": [{"$gte": {prop: low}}, {"$lt": {prop: high}}]}
    return {"$or": [{"$lt": {prop: low}}, {"$gte": {prop: high}}]}


def _test(test: Test, prop: str, aliases: dict[str, Condition]) -> dict[str, Any]:
    op, value = test.op, test.operand
    if op in ("eq", "contains"):
        return {prop: _operand(value, aliases)}
    if op in _OPS:
        return {_OPS[op]: {prop: _operand(value, aliases)}}
    if op == "in":
        return _any_of(prop, value)
    if op == "not_in":
        return {"$and": [{"$neq": {prop: minutes(v)}} for v in value]}
    if op == "exists":
        return {"$ex" if value else "$nex": {prop: 1}}
    return _window(prop, value[0], value[1], inside=op == "between")
