"""Can two rules of a ``unique`` table match the same input? A sound-for-disjointness check.

Two rules are disjoint when some subject (a single-valued key or key field, a context field)
is constrained by both in ways no value satisfies at once (``age < 6`` and ``age ≥ 6``; local
time inside and outside the same window; ``price ≥ $context.amount`` and
``price < $context.amount``), when one requires a fact the other requires absent, or when their
effective dates do not meet. Anything not shown disjoint is reported as a possible overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from itertools import combinations
from typing import Any

from memkg.rules.kinds.compare import minutes
from memkg.rules.spec import Condition, Finding, Ref, Rule, RuleTable, Test

Subject = tuple[Any, ...]
Bound = tuple[Any, bool] | None
"""(value, inclusive)."""
_DAY = frozenset(range(1440))


@dataclass(frozen=True)
class Allowed:
    values: frozenset[Any] | None = None
    excluded: frozenset[Any] = frozenset()
    low: Bound = None
    high: Bound = None
    clock: frozenset[int] | None = None


def _norm(value: Any) -> Any:
    return ("$", str(value)) if isinstance(value, Ref) else minutes(value)


def _comparable(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return bool(a == b)
    numeric = (int, float)
    return (isinstance(a, numeric) and isinstance(b, numeric)) or type(a) is type(b)


def _window(test: Test) -> frozenset[int]:
    low, high = minutes(test.operand[0]), minutes(test.operand[1])
    inside = frozenset(range(low, high)) if low <= high else _DAY - frozenset(range(high, low))
    return inside if test.op == "between" else _DAY - inside


def _tighten(allowed: Allowed, test: Test, clock: bool) -> Allowed:
    op, value = test.op, test.operand
    if clock and op in ("between", "outside"):
        window = _window(test)
        return replace(allowed, clock=window if allowed.clock is None else allowed.clock & window)
    if clock and op in ("lt", "lte", "gt", "gte", "eq") and not isinstance(value, Ref):
        at = minutes(value)
        window = frozenset(
            m
            for m in _DAY
            if {"lt": m < at, "lte": m <= at, "gt": m > at, "gte": m >= at, "eq": m == at}[op]
        )
        return replace(allowed, clock=window if allowed.clock is None else allowed.clock & window)
    if op in ("eq", "contains", "in"):
        new = frozenset(_norm(v) for v in (value if op == "in" else (value,)))
        return replace(allowed, values=_meet(allowed.values, new))
    if op in ("ne", "not_in"):
        new = frozenset(_norm(v) for v in (value if op == "not_in" else (value,)))
        return replace(allowed, excluded=allowed.excluded | new)
    if op in ("gt", "gte"):
        return replace(allowed, low=_max(allowed.low, (_norm(value), op == "gte")))
    if op in ("lt", "lte"):
        return replace(allowed, high=_min(allowed.high, (_norm(value), op == "lte")))
    if op == "between":
        low, high = (_norm(value[0]), True), (_norm(value[1]), False)
        return replace(allowed, low=_max(allowed.low, low), high=_min(allowed.high, high))
    return allowed


def _max(a: Bound, b: Bound) -> Bound:
    """The tighter of two lower bounds."""
    if a is None or b is None or not _comparable(a[0], b[0]):
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return a if not a[1] else b


def _min(a: Bound, b: Bound) -> Bound:
    """The tighter of two upper bounds."""
    if a is None or b is None or not _comparable(a[0], b[0]):
        return a or b
    if a[0] != b[0]:
        return a if a[0] < b[0] else b
    return a if not a[1] else b


def _in_bounds(value: Any, low: Bound, high: Bound) -> bool:
    if isinstance(value, tuple):
        return True
    below = (
        low is not None
        and _comparable(value, low[0])
        and (value < low[0] or (value == low[0] and not low[1]))
    )
    return not below and not (
        high is not None
        and _comparable(value, high[0])
        and (value > high[0] or (value == high[0] and not high[1]))
    )


def _meet(a: frozenset[Any] | None, b: frozenset[Any] | None) -> frozenset[Any] | None:
    """The values both allow (None: any). A join (``$context.a``, ``$alias``) may equal any
    value, another join's included: sets that share none are not shown apart by it."""
    if a is None or b is None:
        return a if b is None else b
    both = a & b
    if not both and any(isinstance(v, tuple) for v in a | b):
        return None
    return both


def _empty(a: Allowed, b: Allowed) -> bool:
    if a.clock is not None and b.clock is not None and not a.clock & b.clock:
        return True
    values = _meet(a.values, b.values)
    excluded = a.excluded | b.excluded
    low, high = _max(a.low, b.low), _min(a.high, b.high)
    if values is not None and not any(
        v not in excluded and _in_bounds(v, low, high) for v in values
    ):
        return True
    if low is None or high is None or not _comparable(low[0], high[0]):
        return False
    if isinstance(low[0], tuple):  # the same join on both ends: x ≥ X and x < X
        return not (low[1] and high[1])
    return bool(low[0] > high[0] or (low[0] == high[0] and not (low[1] and high[1])))


def _subjects(rule: Rule, multi: set[str]) -> dict[Subject, Allowed]:
    found: dict[Subject, Allowed] = {}
    for cond in rule.conditions:
        kind = cond.handler
        if cond.negated or not kind.compares_values or cond.key in multi:
            continue
        for test in cond.tests:
            field = test.field
            subject: Subject = (
                ("context", field) if kind.on_context else (cond.kind, cond.key, field)
            )
            clock = kind.on_context and field == "local_time"
            found[subject] = _tighten(found.get(subject, Allowed()), test, clock)
    return found


def _shape(cond: Condition) -> tuple[Any, ...]:
    return (
        cond.kind,
        cond.key,
        cond.field,
        cond.to,
        cond.via,
        cond.tests and tuple((t.op, t.field, str(t.operand)) for t in cond.tests),
        cond.min_weight,
    )


def _excludes(a: Rule, b: Rule) -> bool:
    """``a`` requires something ``b`` requires absent."""
    for neg in (c for c in b.conditions if c.negated):
        for pos in (c for c in a.conditions if not c.negated and c.kind == neg.kind):
            same_key = (pos.key, pos.to) == (neg.key, neg.to)
            if same_key and (not neg.tests or _shape(pos)[1:] == _shape(neg)[1:]):
                return True
    return False


def _dates(rule: Rule) -> tuple[date, date]:
    return rule.effective_from or date.min, rule.effective_until or date.max


def disjoint(a: Rule, b: Rule, multi: set[str]) -> bool:
    (a_from, a_until), (b_from, b_until) = _dates(a), _dates(b)
    if a_until < b_from or b_until < a_from or _excludes(a, b) or _excludes(b, a):
        return True
    mine, theirs = _subjects(a, multi), _subjects(b, multi)
    return any(_empty(mine[s], theirs[s]) for s in mine.keys() & theirs.keys())


def overlap_findings(table: RuleTable, multi: set[str] | None = None) -> list[Finding]:
    """Pairs of rules that may match together; ``multi`` are keys holding several values."""
    multi = multi or set()
    return [
        Finding(
            "rule.overlap",
            f"may match together with {a.id} (line {a.line}); under "
            "`unique` at most one rule may match: make their conditions exclusive",
            b.file,
            b.line,
            b.id,
        )
        for a, b in combinations(table.rules, 2)
        if not disjoint(a, b, multi)
    ]
