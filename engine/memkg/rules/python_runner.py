"""``PythonRuleRunner``: the ``RuleRunner`` port in plain Python, through the condition kinds.

It reads the same messages as ``DurableRunner`` (the evidence, then the context with the
negation flags) and reports every way each rule matches, as durable-rules does: the context
pattern (effective dates, negation flags, context tests), then each positive condition in order,
joined on earlier bindings, one message per pattern (a message never fills two patterns of a
rule), and last the context tests that read a binding.
``tests/property/test_runner_equivalence.py`` checks it fires what durable-rules fires, with the
same bindings, on every shipped rule file and on generated bundles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from memkg.rules.compiler import (
    compile_table,
    join_props,
    negation_flag,
    pattern_alias,
    rule_name,
    ruleset_name,
)
from memkg.rules.kinds.base import ConditionKind
from memkg.rules.kinds.compare import WILDCARD, Resolve, day_number, lookup, minutes
from memkg.rules.kinds.context import context_prop
from memkg.rules.runner import Firing, RuleEvaluationError, check_widths
from memkg.rules.snapshot import message_index
from memkg.rules.spec import Condition, Ref, Rule, RuleTable

Message = dict[str, Any]
Bound = dict[str, tuple[int, Message]]
"""Alias (``as``) or pattern alias → (message index, message) bound to it."""


@dataclass(frozen=True)
class _Step:
    cond: Condition
    kind: ConditionKind
    pattern: str
    slot: tuple[str, Any]
    alias: str | None
    joins: bool
    """Whether it reads an earlier binding; if not, what it matches is the same for every
    rule and binding of one run, and is worked out once."""


@dataclass(frozen=True)
class _Plan:
    name: str
    low: int
    high: int
    flags: tuple[str, ...]
    context: tuple[tuple[tuple[Any, ...], Condition], ...]
    """Each context condition with its signature (rules share context tests)."""
    checks: tuple[Condition, ...]
    """The context conditions that compare the request with a binding (``wanted: $goal``):
    checked on each way the rule matches (durable-rules tests them on the bound message)."""
    steps: tuple[_Step, ...]
    aliases: Mapping[str, Condition]
    slots: tuple[int, ...] = ()
    """Each context condition's place among its table's distinct context tests."""


def _plan(rule: Rule) -> _Plan:
    steps, flags = [], []
    context: list[Condition] = []
    checks: list[Condition] = []
    for cond in rule.conditions:
        kind = cond.handler
        if kind.on_context:
            joined = any(ref.alias != "context" for ref in cond.refs)
            (checks if joined else context).append(cond)
        elif cond.negated:
            flags.append(negation_flag(rule, cond))
        else:
            slot = (str(kind.message), kind.pool_key(cond))
            joins = any(ref.alias != "context" for ref in cond.refs)
            steps.append(_Step(cond, kind, pattern_alias(cond), slot, cond.alias, joins))
    return _Plan(
        name=rule_name(rule),
        low=day_number(rule.effective_from) if rule.effective_from else 0,
        high=day_number(rule.effective_until) if rule.effective_until else day_number(date.max),
        flags=tuple(flags),
        context=tuple((c.signature, c) for c in context),
        checks=tuple(checks),
        steps=tuple(steps),
        aliases={c.alias: c for c in rule.conditions if c.alias},
    )


class PythonRuleRunner:
    """Matches rule tables in Python; ``tables``: ruleset name → table."""

    def __init__(self, tables: Mapping[str, RuleTable]) -> None:
        self.rulesets = frozenset(tables)
        self._plans: dict[str, tuple[_Plan, ...]] = {}
        self._joins = {name: sorted(join_props(compile_table(t))) for name, t in tables.items()}
        """Per ruleset, the properties whose typed copies durable-rules would be sent: a message
        is as wide here as there (``check_widths``)."""
        self._context: dict[str, tuple[Condition, ...]] = {}
        """Per ruleset, its distinct context tests (rules share them: one run checks each
        once, and a rule reads their truth by its plan's ``slots``)."""
        for name, table in tables.items():
            plans = [_plan(r) for r in table.rules]
            slots: dict[tuple[Any, ...], int] = {}
            tests: list[Condition] = []
            for plan in plans:
                for signature, cond in plan.context:
                    if signature not in slots:
                        slots[signature] = len(tests)
                        tests.append(cond)
            self._context[name] = tuple(tests)
            self._plans[name] = tuple(
                replace(plan, slots=tuple(slots[signature] for signature, _ in plan.context))
                for plan in plans
            )

    @classmethod
    def for_tables(cls, tables: Sequence[RuleTable]) -> PythonRuleRunner:
        return cls({ruleset_name(t): t for t in tables})

    def run(self, ruleset: str, messages: Sequence[dict[str, Any]]) -> list[Firing]:
        plans = self._plans.get(ruleset)
        if plans is None:
            raise RuleEvaluationError(f"no compiled ruleset {ruleset!r}", code="rules.unknown")
        check_widths(messages, self._joins[ruleset])
        last = len(messages) - 1
        ctx = messages[last]
        index: dict[tuple[str, Any], list[tuple[int, Message]]] = {}
        for i in range(last):
            message = messages[i]
            index.setdefault((str(message.get("t")), message_index(message)), []).append(
                (i, message)
            )
        today = ctx.get("today")
        if not isinstance(today, int):
            return []
        run = _Run(ctx, index)
        holds = [cond.handler.matches(cond, ctx, run.resolve) for cond in self._context[ruleset]]
        fired: list[Firing] = []
        for plan in plans:
            if not plan.low <= today <= plan.high:
                continue
            if plan.flags and any(ctx.get(flag) != 1 for flag in plan.flags):
                continue
            for slot in plan.slots:
                if not holds[slot]:
                    break
            else:  # every context test of the rule holds
                for bound in _joins(plan, run):
                    if plan.checks and not _checked(plan, run.ctx, bound):
                        continue
                    found = {p: str(i) for p, (i, _) in bound.items() if p[0] == "c"}
                    fired.append(Firing(plan.name, {"ctx": str(last), **found}))
        return fired


class _Run:
    """One run's messages, and what conditions without joins matched (shared by rules)."""

    def __init__(self, ctx: Message, index: dict[tuple[str, Any], list[tuple[int, Message]]]):
        self.ctx = ctx
        self.index = index
        self.resolve = _resolver(ctx, {}, {})
        self._matched: dict[tuple[Any, ...], list[tuple[int, Message]]] = {}

    def matched(self, step: _Step) -> list[tuple[int, Message]]:
        found = self._matched.get(step.cond.signature)
        if found is None:
            found = self._matched[step.cond.signature] = [
                (i, m)
                for i, m in self.index.get(step.slot, ())
                if step.kind.matches(step.cond, m, self.resolve)
            ]
        return found


def _joins(plan: _Plan, run: _Run) -> list[Bound]:
    """Every binding of the plan's positive conditions, in order."""
    envs: list[Bound] = [{}]
    for step in plan.steps:
        candidates = run.matched(step) if not step.joins else run.index.get(step.slot, [])
        if not candidates:
            return []
        nxt: list[Bound] = []
        for env in envs:
            taken = {i for i, _ in env.values()}
            resolve = _resolver(run.ctx, env, plan.aliases) if step.joins else None
            for i, message in candidates:
                if i in taken:
                    continue
                if resolve is None or step.kind.matches(step.cond, message, resolve):
                    added = {**env, step.pattern: (i, message)}
                    if step.alias:
                        added["@" + step.alias] = (i, message)
                    nxt.append(added)
        if not nxt:
            return []
        envs = nxt
    return envs


def _checked(plan: _Plan, ctx: Message, bound: Bound) -> bool:
    """Whether the plan's context conditions that read bindings hold on ``bound``."""
    resolve = _resolver(ctx, bound, plan.aliases)
    return all(cond.handler.matches(cond, ctx, resolve) for cond in plan.checks)


def _resolver(ctx: Message, env: Bound, aliases: Mapping[str, Condition]) -> Resolve:
    def resolve(operand: Any) -> Any:
        if not isinstance(operand, Ref):
            return minutes(operand)
        if operand.alias == "context":
            return ctx.get(context_prop(operand.field or ""))
        found = env.get("@" + operand.alias)
        if found is None:
            return WILDCARD
        target = aliases[operand.alias]
        return lookup(found[1], target.handler.ref_prop(target, operand.field))

    return resolve
