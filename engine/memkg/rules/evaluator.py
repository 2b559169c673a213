"""Evaluates a rule table on a ``DecisionInput``: candidates, their evidence, and near misses.

durable-rules finds every way each rule matches; a rule that matched several ways proposes
once, bound to the evidence that sorts first by content (never by arrival order), and records
how many other ways it matched. For every rule that did not fire but had all its conditions
but one holding, ``why_not`` names the first condition that failed.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memkg.model.decision import Binding, Candidate
from memkg.model.evidence import Edge
from memkg.model.explanation import ConditionNode, ContextValue, FactNode, RuleNode, WhyNotNode
from memkg.model.fact import Fact
from memkg.rules.compiler import compile_table, pattern_alias, ruleset_name
from memkg.rules.kinds.negation import NotKind
from memkg.rules.matcher import (
    Env,
    Pools,
    RuleCheck,
    check_rule,
    holds_alone,
    pool,
    pools,
    resolver,
)
from memkg.rules.near_miss import closeness, closest_misses, near_miss
from memkg.rules.plan import TablePlan, plan_table
from memkg.rules.reuse import Reuse
from memkg.rules.runner import Firing, RuleRunner
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import Condition, Ref, Rule, RuleBundle, RuleTable
from memkg.rules.text import condition_text, fill

MAX_WHY_NOT = 10
"""The explanation shows at most this many near misses, the closest first."""


@dataclass(frozen=True)
class Evaluation:
    table: RuleTable
    candidates: tuple[Candidate, ...]
    fired: tuple[RuleNode, ...]
    why_not: tuple[WhyNotNode, ...]
    checks: tuple[RuleCheck, ...] = ()
    """The Python walk of every rule that did not fire (for coverage)."""


def whole_lists(rule: Rule) -> frozenset[int]:
    """The conditions of ``rule`` that hold on a list value whole (list facts are one
    message per item): a fact condition with no comparison and no field, that asks only that
    the key is known (``fact: {key: allergies}``), whose ``as:`` name no other condition
    joins on (``eq: $t`` joins on the item). Its binding, placeholder and evidence show the
    whole value, not the item it happened to match."""
    joined = {t.operand.alias for c in rule.conditions for t in c.tests
              if isinstance(t.operand, Ref)} | {c.to.alias for c in rule.conditions
                                                 if isinstance(c.to, Ref)}  # fmt: skip
    return frozenset(c.index for c in rule.conditions
                     if c.kind == "fact" and not c.tests and c.field is None
                     and (c.alias is None or c.alias not in joined))  # fmt: skip


def shown_value(cond: Condition, item: Item, whole: Container[int] = ()) -> Any:
    """What ``cond``, bound to ``item``, shows as its value: the item's (``Item.value``),
    but the whole list of a condition that holds on it whole (``whole``: ``whole_lists``)."""
    if item.fact is not None and cond.index in whole:
        return item.fact.value
    return item.value


def fact_node(fact: Fact, item: Any = None) -> FactNode:
    return FactNode(
        fact_id=fact.id,
        key=fact.key,
        value=fact.value,
        item=item if isinstance(fact.value, list) else None,
        kind=fact.kind.value,
        source=fact.source.value,
        confidence=fact.confidence,
        status=fact.status.value,
        provenance=fact.provenance,
        observed_at=fact.observed_at,
        recorded_at=fact.recorded_at,
        valid_until=fact.valid_until,
        schema_version=fact.schema_version,
    )


def _context_values(
    cond: Condition,
    ctx: dict[str, Any],
    shown: dict[tuple[str, ...], tuple[ContextValue, ...]] | None = None,
) -> tuple[ContextValue, ...]:
    """``shown`` keeps what one evaluation already built (the context does not change)."""
    fields = tuple(dict.fromkeys(t.field for t in cond.tests if t.field))
    found = shown.get(fields) if shown is not None else None
    if found is None:
        found = tuple(ContextValue(field=f, value=ctx.get(f)) for f in fields)
        if shown is not None:
            shown[fields] = found
    return found


def condition_node(
    cond: Condition,
    holds: bool,
    item: Item | None,
    ctx: dict[str, Any],
    failure: str | None = None,
    facts: Mapping[str, Fact] | None = None,
    *,
    text: str | None = None,
    shown: dict[tuple[str, ...], tuple[ContextValue, ...]] | None = None,
    whole: Container[int] = (),
) -> ConditionNode:
    """``facts`` (by id) lets an edge or path show the facts behind its user hop; ``text`` is
    the condition in words when already known, ``shown`` the context values built so far."""
    evidence: dict[str, Any] = {}
    facts = facts or {}
    hops: tuple[Edge, ...] = ()
    if item is not None and item.fact is not None:
        one = None if cond.index in whole else item.props["value"]
        evidence["facts"] = (fact_node(item.fact, one),)
    elif item is not None and item.edge is not None:
        evidence["edges"], hops = (item.edge,), (item.edge,)
    elif item is not None and item.path is not None:
        evidence["paths"], hops = (item.path,), item.path.hops
    behind = [(facts[h.fact_id], h.target) for h in hops if h.fact_id and h.fact_id in facts]
    if behind:
        evidence["facts"] = tuple(fact_node(f, target) for f, target in behind)
    bindings: dict[str, Any] = {}
    if item is not None and item.kind != "context":
        bindings[cond.alias or cond.key or cond.to] = shown_value(cond, item, whole)
    return ConditionNode(
        index=cond.index,
        kind=cond.kind,
        negated=cond.negated,
        text=condition_text(cond) if text is None else text,
        line=cond.line,
        holds=holds,
        bindings=bindings,
        context=_context_values(cond, ctx, shown) if cond.handler.on_context else (),
        failure=failure,
        **evidence,
    )


class Evaluator:
    """A compiled bundle: one durable-rules ruleset per table, evaluated on demand."""

    def __init__(self, bundle: RuleBundle, runner: RuleRunner | None = None) -> None:
        self.bundle = bundle
        if runner is None:  # durable-rules loads its C core only when rules are first compiled
            from memkg.rules.durable_runner import DurableRunner

            runner = DurableRunner(
                {ruleset_name(t): compile_table(t) for t in bundle.tables.values()}
            )
        self.runner = runner
        self._plans = {key: plan_table(table) for key, table in bundle.tables.items()}
        self._wholes: dict[int, frozenset[int]] = {}
        self.reuse = Reuse()
        """What earlier evaluations built on the same rules and facts (``rules/reuse.py``):
        candidates and nodes, facts' messages, the truth of fact conditions on a pool."""

    def plan(self, table: RuleTable) -> TablePlan:
        """The table's plan, worked out when the bundle was compiled."""
        found = self._plans.get((table.domain, table.name))
        return found if found is not None and found.table is table else plan_table(table)

    def messages(
        self, table: RuleTable, inp: DecisionInput, by_key: Pools | None = None
    ) -> list[dict[str, Any]]:
        """What the matcher is sent: the evidence, then the context with the negation flags."""
        by_key = pools(inp.items) if by_key is None else by_key
        ctx = inp.items[-1].props
        resolve = resolver(None, ctx)
        # a negated condition holds alone exactly when no message satisfies what it negates
        flags = {
            flag: int(holds_alone(cond, pool(cond, inp, by_key), resolve))
            for flag, cond in self.plan(table).negations
        }
        return [item.props for item in inp.items[:-1]] + [{**ctx, **flags}]

    def evaluate(
        self, table: RuleTable, inp: DecisionInput, *, walk_all: bool = False,
        lists_whole: bool = True,
    ) -> Evaluation:  # fmt: skip
        """``walk_all`` finds the first failing condition of every rule that did not fire
        (rule cases and coverage need it); otherwise only of rules that nearly fired.
        ``lists_whole``: a condition that holds on a list value whole shows it whole
        (``whole_lists``); False, as records made before ``LISTS_WHOLE`` showed it: the item
        it matched."""
        plan = self.plan(table)
        by_key = pools(inp.items)
        firings = self.runner.run(ruleset_name(table), self.messages(table, inp, by_key))
        rules = plan.by_name
        grouped: dict[str, list[Env]] = {}
        for firing in firings:
            if firing.rule not in rules:
                continue
            grouped.setdefault(firing.rule, []).append(self._env(rules[firing.rule], firing, inp))
        facts = inp.facts_by_id
        shown: dict[tuple[str, ...], tuple[ContextValue, ...]] = {}
        candidates, fired = [], []
        for name in sorted(grouped, key=plan.positions.__getitem__):  # in table order
            rule, envs = rules[name], grouped[name]
            envs.sort(key=lambda env: [(env[k].sort_key, env[k].ref) for k in sorted(env)])
            whole = self._whole(rule) if lists_whole else frozenset()
            candidate, node = self._propose(rule, envs[0], len(envs) - 1, inp, plan, facts, shown,
                                            whole)  # fmt: skip
            candidates.append(candidate)
            fired.append(node)
        if walk_all:
            memo: dict[Any, bool] = {}
            unmatched = [
                r for r, n in zip(table.rules, plan.names, strict=True) if n not in grouped
            ]
            checks = tuple(check_rule(rule, inp, by_key, memo) for rule in unmatched)
            near = sorted((c for c in checks if near_miss(c)), key=closeness)
        else:  # walk the joins only of the closest rules, until the explanation has enough
            near = closest_misses(plan, grouped, inp, by_key, self.reuse, MAX_WHY_NOT)
            checks = tuple(near)
        why_not = tuple(self._why_not(c, inp, by_key, plan) for c in near[:MAX_WHY_NOT])
        return Evaluation(table, tuple(candidates), tuple(fired), why_not, checks)

    def _whole(self, rule: Rule) -> frozenset[int]:
        """``whole_lists`` of ``rule``, worked out once (the bundle holds its rules)."""
        found = self._wholes.get(id(rule))
        if found is None:
            found = self._wholes[id(rule)] = whole_lists(rule)
        return found

    @staticmethod
    def _env(rule: Rule, firing: Firing, inp: DecisionInput) -> Env:
        env: Env = {}
        for cond in rule.conditions:
            message = firing.bound.get(pattern_alias(cond))
            if message is not None:
                env[f"#{cond.index}"] = inp.items[int(message)]
        return env

    def _propose(
        self,
        rule: Rule,
        env: Env,
        others: int,
        inp: DecisionInput,
        plan: TablePlan | None = None,
        facts: Mapping[str, Fact] | None = None,
        shown: dict[tuple[str, ...], tuple[ContextValue, ...]] | None = None,
        whole: frozenset[int] = frozenset(),
    ) -> tuple[Candidate, RuleNode]:
        ctx = inp.items[-1].props
        message = fill(rule.explain, lambda name: _lookup(name, rule, env, ctx, whole))
        key, held = _kept_by(*_fired_key(rule, env, ctx, message, others), inp)
        key = None if key is None else (*key, whole)
        if key is not None:
            found = self.reuse.get(key, held)
            if found is not None:
                return found  # type: ignore[no-any-return]
        facts = inp.facts_by_id if facts is None else facts
        nodes, bindings = [], []
        for cond in rule.conditions:
            item = env.get(f"#{cond.index}")
            text = plan.text(rule, cond) if plan is not None else None
            nodes.append(condition_node(cond, True, item, ctx, facts=facts, text=text, shown=shown,
                                        whole=whole))  # fmt: skip
            if item is not None or cond.handler.on_context:
                bindings.append(Binding(condition=cond.index, ref=item.ref if item else "context"))
        candidate = Candidate(
            rule_id=rule.id,
            rule_index=rule.index,
            version=rule.version,
            output=rule.output,
            reason_code=rule.reason_code,
            message=message,
            bindings=tuple(bindings),
            alternatives=others,
        )
        node = RuleNode(
            rule_id=rule.id,
            version=rule.version,
            description=rule.description,
            file=rule.file,
            line=rule.line,
            reason_code=rule.reason_code,
            message=message,
            action=rule.output.action,
            urgency=rule.output.urgency.value if rule.output.urgency else None,
            parameters=dict(rule.output.parameters),
            conditions=tuple(nodes),
            alternatives=others,
        )
        if key is not None:
            self.reuse.put(key, held, (candidate, node))
        return candidate, node

    def _why_not(
        self, check: RuleCheck, inp: DecisionInput, by_key: Pools, plan: TablePlan | None = None
    ) -> WhyNotNode:
        rule, index = check.rule, check.failing
        assert index is not None
        cond = rule.conditions[index]
        ctx = inp.items[-1].props
        candidates = pool(cond, inp, by_key)
        failure = failure_text(cond, inp, candidates)
        # the node shows the rule, how far it got, the failure and the context it reads; the
        # entry lives as long as the facts the failure was worked out from (``_kept_by``)
        key, held = _kept_by(
            ("why_not", id(rule), index, check.holding, failure, _shown_context(cond, ctx)),
            (rule, *(item.fact for item in candidates if item.fact is not None)),
            inp,
        )
        found = self.reuse.get(key, held) if key is not None else None
        if found is not None:
            return found  # type: ignore[no-any-return]
        text = plan.text(rule, cond) if plan is not None else None
        node = WhyNotNode(
            rule_id=rule.id,
            description=rule.description,
            file=rule.file,
            line=rule.line,
            action=rule.output.action,
            holding=check.holding,
            total=len(rule.conditions),
            failing=condition_node(cond, False, None, ctx, failure, text=text),
        )
        if key is not None:
            self.reuse.put(key, held, node)
        return node


def _kept_by(
    key: tuple[Any, ...] | None, held: tuple[object, ...], inp: DecisionInput
) -> tuple[tuple[Any, ...] | None, tuple[object, ...]]:
    """The key and objects a node is kept under in ``Reuse``: those it was built from, or,
    for a node shown from the rule and the request's context alone (a context test that
    failed, a rule that fired on the context), the user's memory as well
    (``DecisionInput.ties``). Bound to no memory of the user's, such a node would hold the
    request's context values (a symptom, say) past their erasure; bound to it, it goes with
    it, and stays across writes that leave it as it is. An input tied to nothing keeps
    nothing (no key)."""
    if key is None or len(held) > 1:
        return key, held
    if not inp.ties:
        return None, ()
    return (*key, inp.user_id), (*held, *inp.ties)


def _shown_context(cond: Condition, ctx: dict[str, Any]) -> tuple[str, ...] | None:
    """The context values ``cond``'s node shows, as ``repr`` (``True`` and ``1`` differ)."""
    if not cond.handler.on_context:
        return None
    return tuple(repr(ctx.get(t.field)) for t in cond.tests if t.field)


def _fired_key(
    rule: Rule, env: Env, ctx: dict[str, Any], message: str, others: int
) -> tuple[tuple[Any, ...] | None, tuple[object, ...]]:
    """What a fired rule's candidate and node are built from: the key ``Reuse`` keeps them
    under and the objects they show (only the rule when shown from the context alone:
    ``_kept_by`` binds it to the user's facts); no key when a condition is bound to an edge or
    a path, whose weights move with the clock."""
    parts: list[Any] = ["fired", id(rule), others, message]
    held: list[object] = [rule]
    for cond in rule.conditions:
        item = env.get(f"#{cond.index}")
        if item is None or item.kind == "context":
            parts.append(None if item is None else "context")
        elif item.kind == "fact" and item.fact is not None:
            parts.append(item.ref)
            held.append(item.fact)
        else:
            return None, ()
        parts.append(_shown_context(cond, ctx))
    return tuple(parts), tuple(held)


def _lookup(
    name: str, rule: Rule, env: Env, ctx: dict[str, Any], whole: Container[int] = ()
) -> Any:
    for cond in rule.conditions:
        item = env.get(f"#{cond.index}")
        if item is not None and name in (cond.alias, cond.key, cond.to):
            return shown_value(cond, item, whole)
    field = name.removeprefix("context.")
    return ctx.get(field)


def failure_text(cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
    """Why ``cond`` failed, in words: what was found instead, or what was missing and why."""
    if cond.negated and not cond.handler.on_context:
        return NotKind.found(cond, candidates)
    return cond.handler.failure(cond, inp, candidates)
