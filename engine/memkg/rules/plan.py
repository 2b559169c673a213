"""What every evaluation of one rule table needs and no evaluation changes, worked out once.

A table is evaluated on every decision and is fixed for the life of its bundle, so its rule
names, the words of its conditions, the negation flags the context message carries, the keys
and paths it reads, and its distinct condition tests (``Condition.signature``: several rules
often test the same thing, and one evaluation checks each test once) are read from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from memkg.rules.compiler import negation_flag, rule_name
from memkg.rules.matcher import unjoined
from memkg.rules.spec import Condition, Rule, RuleTable
from memkg.rules.text import condition_text

CLOCK_FIELDS = frozenset({"local_time", "weekday", "today", "timezone"})
"""The context fields derived from the clock in the user's time zone."""


@dataclass(frozen=True)
class TablePlan:
    table: RuleTable
    names: tuple[str, ...]
    """Each rule's name in the compiled ruleset, in table order."""
    by_name: dict[str, Rule]
    positions: dict[str, int]
    """Each rule's position in the table, by name."""
    texts: dict[tuple[int, int], str]
    """(rule index, condition index) → the condition in words."""
    negations: tuple[tuple[str, Condition], ...]
    """The flag of each negated condition, as the context message carries it."""
    keys: frozenset[str]
    """The memory keys the conditions read."""
    paths: tuple[tuple[str, str | None], ...]
    """Every (to, via) a path condition asks for, sorted."""
    tests: tuple[Condition, ...]
    """One condition for each distinct test of the table."""
    rule_tests: tuple[tuple[int, ...], ...]
    """Per rule, in table order: each condition's position in ``tests``."""
    by_facts: tuple[tuple[tuple[str, object], tuple[int, ...]], ...] = ()
    """The tests whose pool's facts alone decide whether they hold (fact conditions with no
    operand from the context or another binding), by pool: its (message type, key) and
    their positions in ``tests``."""
    unjoined: frozenset[str] = frozenset()
    """The names of the rules whose walk fails only where a condition fails on its own
    (``matcher.unjoined``)."""
    clock: bool = False
    """Whether the rules read the local clock (``CLOCK_FIELDS``: a context test or
    ``$context`` operand on one, or a rule's effective dates, compared with the local day),
    hence the user's time zone."""

    def text(self, rule: Rule, cond: Condition) -> str:
        found = self.texts.get((rule.index, cond.index))
        return condition_text(cond) if found is None else found


def plan_table(table: RuleTable) -> TablePlan:
    slots: dict[tuple[object, ...], int] = {}
    tests: list[Condition] = []
    rule_tests = []
    for rule in table.rules:
        positions = []
        for cond in rule.conditions:
            position = slots.get(cond.signature)
            if position is None:
                position = slots[cond.signature] = len(tests)
                tests.append(cond)
            positions.append(position)
        rule_tests.append(tuple(positions))
    conditions = [(rule, cond) for rule in table.rules for cond in rule.conditions]
    return TablePlan(
        table=table,
        names=tuple(rule_name(rule) for rule in table.rules),
        by_name={rule_name(rule): rule for rule in table.rules},
        positions={rule_name(rule): i for i, rule in enumerate(table.rules)},
        texts={(rule.index, cond.index): condition_text(cond) for rule, cond in conditions},
        negations=tuple(
            (negation_flag(rule, cond), cond) for rule, cond in conditions if cond.negated
        ),
        keys=frozenset(cond.key for _, cond in conditions if cond.key),
        paths=tuple(
            sorted(
                {p for _, c in conditions for p in c.handler.paths(c)},
                key=lambda pair: (pair[0], pair[1] or ""),
            )
        ),
        tests=tuple(tests),
        rule_tests=tuple(rule_tests),
        by_facts=_by_facts(tests),
        unjoined=frozenset(rule_name(rule) for rule in table.rules if unjoined(rule)),
        clock=any(_reads_clock(rule) for rule in table.rules),
    )


def _reads_clock(rule: Rule) -> bool:
    if rule.effective_from is not None or rule.effective_until is not None:
        return True
    for cond in rule.conditions:
        if cond.kind == "context" and any(t.field in CLOCK_FIELDS for t in cond.tests):
            return True
        if any(r.alias == "context" and r.field in CLOCK_FIELDS for r in cond.refs):
            return True
    return False


def _by_facts(tests: list[Condition]) -> tuple[tuple[tuple[str, object], tuple[int, ...]], ...]:
    found: dict[tuple[str, object], list[int]] = {}
    for position, cond in enumerate(tests):
        if cond.kind == "fact" and not cond.refs:
            kind = cond.handler
            found.setdefault((str(kind.message), kind.pool_key(cond)), []).append(position)
    return tuple((key, tuple(positions)) for key, positions in found.items())
