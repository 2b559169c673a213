"""Which rules nearly fired, and how far each got: the rules an explanation's ``why_not`` shows.

A rule that did not fire is close when all its conditions but one hold on their own; the
closest are walked (``matcher.check_rule``) until the explanation has enough near misses, the
closest first. What repeats from one decision to the next is kept in the evaluator's
``Reuse`` (``rules/reuse.py``), each entry for as long as the facts it was worked out from:

* the truth of the fact conditions on a pool of facts, by the facts (``_by_facts``);
* which rules are close, by the truth of every distinct test and the rules that fired;
* the walk of a rule that reads only facts and the context, by those facts and the context
  properties it reads (``_walk_key``).

A rule whose conditions share no messages and read no binding (``matcher.unjoined``) fails
where a condition fails on its own, found without a walk.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from memkg.rules.compiler import rule_name
from memkg.rules.kinds.compare import Resolve
from memkg.rules.kinds.context import context_prop
from memkg.rules.matcher import Pools, RuleCheck, check_rule, holds_alone, pool, resolver
from memkg.rules.plan import TablePlan
from memkg.rules.reuse import Reuse
from memkg.rules.snapshot import DecisionInput
from memkg.rules.spec import Rule


def closest_misses(
    plan: TablePlan,
    fired: Collection[str],
    inp: DecisionInput,
    by_key: Pools,
    reuse: Reuse,
    limit: int,
) -> list[RuleCheck]:
    """Up to ``limit`` rules that did not fire (``fired``: the names of those that did) and
    nearly did, walked, the closest first."""
    memo: dict[Any, bool] = {}
    near = []
    for rule in _close(plan, fired, inp, by_key, memo, reuse):
        walked = _walk(plan, rule, inp, by_key, memo, reuse)
        if near_miss(walked):
            near.append(walked)
        if len(near) == limit:
            break
    return near


def near_miss(check: RuleCheck) -> bool:
    """All conditions but one held on their own (and at least one did)."""
    total = len(check.holds)
    return (
        check.failing is not None
        and check.in_effect
        and check.holding >= 1
        and total - check.holding <= 1
    )


def closeness(check: RuleCheck) -> tuple[int, int, int]:
    return (len(check.holds) - check.holding, -check.holding, check.rule.index)


def _close(
    plan: TablePlan,
    fired: Collection[str],
    inp: DecisionInput,
    by_key: Pools,
    memo: dict[Any, bool],
    reuse: Reuse,
) -> tuple[Rule, ...]:
    """Rules that did not fire with all their conditions but one holding on their own
    (``matcher.holding``, each distinct test checked once), the closest first; ``memo``
    gets the truth of every test.

    Which rules these are follows from the rules that fired and the truth of each test
    alone, so ``reuse`` keeps them under those (for the user, while the user's memory is
    resident): an evaluation whose tests come out as an earlier one's (the same facts, or
    a write that leaves them deciding the same, a context that decides the same) skips
    the walk over the rules.
    """
    resolve = resolver(None, inp.items[-1].props)
    tests = plan.tests
    truth: list[bool | None] = [None] * len(tests)
    _by_facts(plan, by_key, resolve, truth, memo, reuse)
    for position, found in enumerate(truth):
        if found is None:
            cond = tests[position]
            truth[position] = memo[cond.signature] = holds_alone(
                cond, pool(cond, inp, by_key), resolve
            )
    # a function of the plan, the rules that fired and the truth of the tests, kept while
    # the user's memory is (``DecisionInput.ties``; tied to nothing, not kept)
    key = ("close", id(plan), inp.user_id, frozenset(fired), tuple(truth))
    kept_by = (plan, *inp.ties)
    kept = reuse.get(key, kept_by) if inp.ties else None
    if kept is not None:
        return kept  # type: ignore[no-any-return]
    close = []
    for rule, name, positions in zip(plan.table.rules, plan.names, plan.rule_tests,
                                     strict=True):  # fmt: skip
        if name in fired:
            continue
        held = sum(truth[position] for position in positions)  # type: ignore[misc]
        misses = len(positions) - held
        if misses <= 1 and misses < len(positions):
            close.append((misses, -held, rule.index, rule))
    closest = tuple(rule for *_, rule in sorted(close, key=lambda c: c[:3]))
    if inp.ties:
        reuse.put(key, kept_by, closest)
    return closest


def _by_facts(
    plan: TablePlan,
    by_key: Pools,
    resolve: Resolve,
    truth: list[bool | None],
    memo: dict[Any, bool],
    reuse: Reuse,
) -> None:
    """Fills ``truth`` (and ``memo``) for the tests whose pool's facts alone decide them
    (``TablePlan.by_facts``): what an earlier evaluation found on the same pool, the
    same fact objects, when ``reuse`` kept it, else checked now and kept."""
    tests = plan.tests
    for pool_key, positions in plan.by_facts:
        candidates = by_key.get(pool_key)
        if not candidates:
            continue  # nothing to check: the scan decides them at once
        held = (plan, *(item.fact for item in candidates))
        if any(fact is None for fact in held):
            continue
        key = ("by_facts", id(plan), pool_key, tuple(item.ref for item in candidates))
        found = reuse.get(key, held)
        if found is None:
            found = tuple(holds_alone(tests[p], candidates, resolve) for p in positions)
            reuse.put(key, held, found)
        for position, holds in zip(positions, found, strict=True):
            truth[position] = memo[tests[position].signature] = holds


def _walk(
    plan: TablePlan,
    rule: Rule,
    inp: DecisionInput,
    by_key: Pools,
    memo: dict[Any, bool],
    reuse: Reuse,
) -> RuleCheck:
    """``check_rule`` on a rule that did not fire. A rule whose conditions share no
    messages and read no binding (``TablePlan.unjoined``) fails where a condition fails
    alone, read off ``memo``; the walk of another that reads only facts and the context
    is kept in ``reuse``: it is a function of the rule, the facts in the pools its
    conditions read (the same objects) and the context properties it reads
    (``_walk_key``), so the next decision on the same facts walks nothing."""
    if rule_name(rule) in plan.unjoined:
        return check_rule(rule, inp, by_key, memo, unjoined=True)
    key, held = _walk_key(rule, inp, by_key)
    if key is not None:
        kept = reuse.get(key, held)
        if kept is not None:
            return kept  # type: ignore[no-any-return]
    walked = check_rule(rule, inp, by_key, memo)
    # an example binds this input's items; a walk that read no fact is kept by nothing
    if key is not None and walked.example is None and len(held) > 1:
        reuse.put(key, held, walked)
    return walked


def _walk_key(
    rule: Rule, inp: DecisionInput, by_key: Pools
) -> tuple[tuple[Any, ...] | None, tuple[object, ...]]:
    """What ``check_rule`` reads of ``inp`` for ``rule``: the key ``Reuse`` keeps its walk
    under and the facts it reads; no key when a condition reads an edge or a path (whose
    weights move with the clock) or a message that is not a fact.

    A fact condition reads the messages of its pool (each fact's messages are fixed by the
    fact, and ``ref`` tells them apart); a context test reads the context property it
    compares, an operand ``$context.field`` that field's property, and ``in_effect`` reads
    ``today``. Values enter as ``repr`` (``True`` and ``1`` differ).
    """
    ctx = inp.items[-1].props
    parts: list[Any] = ["walk", id(rule)]
    held: list[object] = [rule]
    reads = {"today"}
    for cond in rule.conditions:
        if cond.kind == "context":
            reads.update(context_prop(t.field or "") for t in cond.tests)
        elif cond.kind == "fact":
            candidates = pool(cond, inp, by_key)
            for item in candidates:
                if item.fact is None:
                    return None, ()
                held.append(item.fact)
            parts.append(tuple(item.ref for item in candidates))
        else:
            return None, ()
        reads.update(context_prop(r.field or "") for r in cond.refs if r.alias == "context")
    parts.append(tuple((name, repr(ctx.get(name))) for name in sorted(reads)))
    return tuple(parts), tuple(held)
