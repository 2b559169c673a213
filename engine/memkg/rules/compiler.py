"""Compiles a rule table to a durable-rules ruleset definition (JSON), and evidence to messages.

Each rule becomes ``r<index>`` with an ``all`` of patterns: ``ctx`` (the request context,
always first, so joins can read it; effective dates and negations are tested on it too), then
``c<i>`` for condition ``i`` (a context test that joins a binding is made on the bound
message: ``split_context_joins``). Messages carry ``t`` (``fact``, ``edge``,
``path``, ``context``); a list-valued fact becomes one message per item, so ``contains`` is
an equality and the explanation can name the item.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, Literal

from memkg.rules.kinds.compare import CONVERSE, JOIN_PREFIX, day_number, join_prop, minutes
from memkg.rules.kinds.compare import pattern as on_prop
from memkg.rules.kinds.context import context_prop
from memkg.rules.spec import Condition, Ref, Rule, RuleTable, Test

MESSAGE_TYPES = ("fact", "edge", "path", "context")
"""The message types evaluations send (``snapshot.Item.kind``)."""

MESSAGE_PROPS = frozenset({"t", "id", "sid"})
"""What every message carries besides its content: ``t``, its type (one of ``MESSAGE_TYPES``),
and the ``sid`` and ``id`` durable-rules reads, which its runner sets. A request context field
of such a name would overwrite them in the context message (``loader`` refuses to declare one)."""


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
    kinds = [{"t": kind} for kind in MESSAGE_TYPES]
    rules[SINK] = {"all": [{"m": {"$or": kinds}}, {"never": {"t": "never"}}], "run": SINK}
    rules[DONE] = {"all": [{"m": {"t": "context"}}], "run": DONE}
    return rules


def split_context_joins(cond: Condition) -> tuple[Condition, tuple[Test, ...]]:
    """A context condition's tests that read only the request (as a condition), and those
    that compare a request field with a binding (``wanted: $goal``).

    A test of the second sort is made on the bound message, turned round (``minutes: {lt:
    $m}`` is ``m gt context.minutes``): every pattern may join the context message, which
    comes first, while the context pattern can join nothing bound after it.
    """
    joins = tuple(
        t for t in cond.tests if isinstance(t.operand, Ref) and t.operand.alias != "context"
    )
    if not joins:
        return cond, ()
    return replace(cond, tests=tuple(t for t in cond.tests if t not in joins)), joins


def compile_rule(rule: Rule) -> dict[str, Any]:
    aliases = {c.alias: c for c in rule.conditions if c.alias}
    joined: dict[str, set[str]] = {}

    def compile_operand(value: Any) -> Any:
        compiled = _operand(value, aliases)
        if isinstance(value, Ref):
            [(alias, prop)] = compiled.items()
            joined.setdefault(alias, set()).add(prop)
        return compiled

    ctx: list[Any] = [{"t": "context"}]
    if rule.effective_from:
        ctx.append({"$gte": {"today": day_number(rule.effective_from)}})
    if rule.effective_until:
        ctx.append({"$lte": {"today": day_number(rule.effective_until)}})
    patterns: list[dict[str, Any]] = [{"ctx": {"$and": ctx}}]
    tests_of: dict[str, list[Any]] = {}
    for cond in rule.conditions:
        kind = cond.handler
        if kind.on_context:
            own, joins = split_context_joins(cond)
            ctx += kind.patterns(own, compile_operand)
            for test in joins:  # on the bound message: the context pattern comes before it
                target = aliases[test.operand.alias]
                prop = target.handler.ref_prop(target, test.operand.field)
                converse = Test(CONVERSE[test.op], Ref("context", test.field), None, test.line)
                tests_of[pattern_alias(target)].append(on_prop(converse, prop, compile_operand))
        elif cond.negated:
            ctx.append({negation_flag(rule, cond): 1})
        else:
            tests = tests_of[pattern_alias(cond)] = kind.patterns(cond, compile_operand)
            patterns.append({pattern_alias(cond): {"$and": tests}})
    for pattern in patterns:  # a joined message must hold the property (durable-rules crashes
        [(alias, tests)] = pattern.items()  # on a join to a missing one; Python never compares)
        tests["$and"] += [{"$ex": {join_prop(p, "t"): 1}} for p in sorted(joined.get(alias, ()))]
    return {"all": patterns, "run": rule_name(rule)}


BETA_LIST_LENGTH = 256
"""At most this many patterns of one ruleset may run exactly the same tests in the same order:
durable-rules' C core links them all to the alpha node the tests end at, and refuses the
ruleset beyond it ("Could not create ruleset, error code: 108", ``ERR_RULE_BETA_LIMIT_EXCEEDED``
in its ``rules.h``). Measured on 2.0.28: 255 rules whose request-context pattern tests only
``t == context`` (and ``DONE``, the 256th) register, 256 are refused; 256 rules sharing a
fact pattern register and 257 are refused (once 257 registered: we keep to the 256 that always
did)."""

NEXT_BUCKET_LENGTH = 512
"""At most this many distinct tests may follow one chain of tests in a ruleset (the alpha
node's hash set of next nodes): with 513 (513 rules testing a context field for 513 values,
or one key each of 513 keys), registering the ruleset never returned in our probes."""


@dataclass(frozen=True)
class Overflow:
    """A chain of tests in a compiled ruleset with more than durable-rules can hold."""

    kind: Literal["shared", "branches"]
    """``shared``: more than ``BETA_LIST_LENGTH`` patterns run exactly ``tests``;
    ``branches``: more than ``NEXT_BUCKET_LENGTH`` distinct tests follow ``tests``."""
    tests: tuple[str, ...]
    """The chain, each test as JSON text (``()`` is the root)."""
    count: int
    limit: int
    rules: tuple[str, ...]
    """The compiled rules involved (``r<index>``, ``SINK``, ``DONE``), in ruleset order; for
    ``branches``, the first rule through each distinct next test."""


def capacity_problems(compiled: dict[str, Any]) -> list[Overflow]:
    """Where ``compiled`` (``compile_table``) exceeds what durable-rules can register.

    The C core builds one alpha node per test and shares it between patterns whose tests so
    far are the same, in the same order (patterns testing the same things in another order do
    not share); a pattern is linked to the node its last test ends at. This models that
    network: each item of a pattern's ``$and`` (or each property of a plain pattern) is one
    test; any other pattern (``$or``) is one opaque test.
    """
    ends: dict[tuple[str, ...], list[str]] = defaultdict(list)
    branches: dict[tuple[str, ...], dict[str, str]] = defaultdict(dict)
    for name, rule in compiled.items():
        for pattern in rule.get("all", ()):
            for tests in pattern.values():
                chain = _tests(tests)
                for depth, test in enumerate(chain):
                    branches[chain[:depth]].setdefault(test, name)
                ends[chain].append(name)
    found = [
        Overflow("shared", chain, len(names), BETA_LIST_LENGTH, tuple(names))
        for chain, names in ends.items()
        if len(names) > BETA_LIST_LENGTH
    ]
    found += [
        Overflow("branches", chain, len(nexts), NEXT_BUCKET_LENGTH, tuple(nexts.values()))
        for chain, nexts in branches.items()
        if len(nexts) > NEXT_BUCKET_LENGTH
    ]
    return found


def _tests(pattern: Any) -> tuple[str, ...]:
    if isinstance(pattern, dict) and list(pattern) == ["$and"]:
        return tuple(json.dumps(test, sort_keys=True) for test in pattern["$and"])
    if isinstance(pattern, dict) and not any(key.startswith("$") for key in pattern):
        return tuple(json.dumps({k: v}, sort_keys=True) for k, v in pattern.items())
    return (json.dumps(pattern, sort_keys=True),)


def _operand(value: Any, aliases: dict[str, Condition]) -> Any:
    if not isinstance(value, Ref):
        return minutes(value)
    if value.alias == "context":
        return {"ctx": context_prop(value.field or "")}
    target = aliases[value.alias]
    return {pattern_alias(target): target.handler.ref_prop(target, value.field)}


def join_props(compiled: Any) -> set[str]:
    """The properties whose typed copies (``compare.join_prop``) a compiled ruleset reads."""
    found: set[str] = set()
    stack = [compiled]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(item.keys())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.startswith(JOIN_PREFIX + "t_"):
            found.add(item.removeprefix(JOIN_PREFIX + "t_").replace("/", "."))
    return found
