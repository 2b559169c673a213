"""A `context` condition may compare a request field with a value bound earlier (`$alias`).

The context message is the first pattern of every compiled rule, so durable-rules can join it
to nothing bound after it; the comparison is made on the bound message instead. Both runners,
the Python walk behind ``why_not`` and the explanation must agree on it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memkg.rules.compiler import compile_table, ruleset_name
from memkg.rules.durable_runner import DurableRunner
from memkg.rules.evaluator import Evaluator
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle
from memkg.rules.matcher import check_rule, pools
from memkg.rules.python_runner import PythonRuleRunner
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import RuleBundle, RuleTable

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
TODAY = 20260501
DOMAIN = """\
actions: {go: {description: go}}
context:
  wanted: {type: string, enum: [strength, endurance]}
  minutes: {type: integer}
"""
SCHEMAS = {
    "training.goal": {"type": "string", "enum": ["strength", "endurance"]},
    "training.minutes": {"type": "integer"},
    "training.plan": {"type": "object", "properties": {"minutes": {"type": "integer"}}},
}


def table(*when: dict[str, Any]) -> tuple[RuleBundle, RuleTable]:
    rules = [{"id": "t.r", "when": list(when), "then": {"action": "go"}, "reason_code": "R",
              "explain": "wanted {wanted}"}]  # fmt: skip
    text = json.dumps({"hit_policy": "first", "allow_no_match": True, "rules": rules})
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/session.yaml": text})
    assert problems == []
    return bundle, bundle.tables[("t", "session")]


def decision(facts: dict[str, Any], ctx: dict[str, Any]) -> DecisionInput:
    messages = [
        {"t": "fact", "key": k, "value": v, "source": "profile", "confidence": 1.0}
        for k, v in facts.items()
    ]
    messages.append({"t": "context", "today": TODAY, "timezone": "UTC", "local_time": "12:00",
                     "local_minutes": 720, "weekday": "fri", **ctx})  # fmt: skip
    items = tuple(Item(f"m{i}", m["t"], m) for i, m in enumerate(messages))
    return DecisionInput("u", "t", NOW, "UTC", items[-1].props, (), (), (), items=items)


def fires(bundle: RuleBundle, tab: RuleTable, inp: DecisionInput) -> bool:
    """Whether the rule fires, after checking that both runners and the walk agree on it."""
    durable = Evaluator(bundle, DurableRunner({ruleset_name(tab): compile_table(tab)}))
    python = Evaluator(bundle, PythonRuleRunner.for_tables([tab]))
    one, other = durable.evaluate(tab, inp), python.evaluate(tab, inp)
    assert (one.candidates, one.fired, one.why_not) == (
        other.candidates,
        other.fired,
        other.why_not,
    )
    [rule] = tab.rules
    walked = check_rule(rule, inp, pools(inp.items)).failing is None
    assert walked == bool(one.candidates)
    return bool(one.candidates)


GOAL = {"fact": {"key": "training.goal", "as": "g"}}


@pytest.mark.parametrize("form", [{"wanted": "$g"}, {"wanted": {"eq": "$g"}}])
def test_a_context_field_equal_to_a_bound_fact_holds_only_when_they_are_equal(
    form: dict[str, Any],
) -> None:
    """The rule compared nothing: it fired whatever the request asked for, and its explanation
    printed the two different values as equal."""
    bundle, tab = table(GOAL, {"context": form})
    assert not fires(bundle, tab, decision({"training.goal": "strength"}, {"wanted": "endurance"}))
    assert fires(bundle, tab, decision({"training.goal": "strength"}, {"wanted": "strength"}))


def test_a_context_field_unlike_a_bound_fact_holds_only_when_they_differ() -> None:
    """``ne`` is the negation an author reaches for next; it was ignored the same way."""
    bundle, tab = table(GOAL, {"context": {"wanted": {"ne": "$g"}}})
    assert fires(bundle, tab, decision({"training.goal": "strength"}, {"wanted": "endurance"}))
    assert not fires(bundle, tab, decision({"training.goal": "strength"}, {"wanted": "strength"}))


@pytest.mark.parametrize(
    ("op", "given", "expected"),
    [("lt", 20, True), ("lt", 30, False), ("lte", 30, True), ("gt", 30, False),
     ("gt", 40, True), ("gte", 30, True), ("gte", 29, False)],
)  # fmt: skip
def test_an_ordering_of_a_context_field_against_a_bound_fact_reads_in_the_written_direction(
    op: str, given: int, expected: bool
) -> None:
    """``minutes: {lt: $m}`` means the request's minutes are below the fact's: compared on the
    fact's side, the order must be turned round, not kept."""
    bundle, tab = table(
        {"fact": {"key": "training.minutes", "as": "m"}}, {"context": {"minutes": {op: "$m"}}}
    )
    assert fires(bundle, tab, decision({"training.minutes": 30}, {"minutes": given})) is expected


def test_a_context_field_joins_a_field_of_a_bound_object() -> None:
    """``$alias.field`` reads one field of an object value, on the context side as on a fact's."""
    bundle, tab = table(
        {"fact": {"key": "training.plan", "as": "p"}},
        {"context": {"minutes": {"gte": "$p.minutes"}, "wanted": "strength"}},
    )
    plan = {"training.plan": {"minutes": 30}}
    assert fires(bundle, tab, decision(plan, {"minutes": 45, "wanted": "strength"}))
    assert not fires(bundle, tab, decision(plan, {"minutes": 20, "wanted": "strength"}))
    assert not fires(bundle, tab, decision(plan, {"minutes": 45, "wanted": "endurance"}))


def test_a_context_field_the_request_lacks_never_equals_a_bound_fact() -> None:
    """A missing field compares with nothing, as everywhere else in a rule."""
    bundle, tab = table(GOAL, {"context": {"wanted": "$g"}})
    assert not fires(bundle, tab, decision({"training.goal": "strength"}, {}))


def test_a_failed_context_join_is_the_condition_why_not_names() -> None:
    """The explanation must name the context test that failed, not the fact it joins."""
    bundle, tab = table(GOAL, {"context": {"wanted": "$g"}})
    inp = decision({"training.goal": "strength"}, {"wanted": "endurance"})
    result = Evaluator(bundle).evaluate(tab, inp, walk_all=True)
    [miss] = result.why_not
    assert miss.failing.index == 1 and miss.failing.kind == "context"


def test_lint_accepts_a_context_join_on_an_earlier_binding_only() -> None:
    """Joining an alias bound later, or never, is refused; one bound earlier is clean."""
    bundle, _ = table(GOAL, {"context": {"wanted": "$g"}})
    assert lint_bundle(bundle, lambda _d, key: SCHEMAS.get(key)) == []
    bundle, _ = table({"context": {"wanted": "$g"}}, GOAL)
    [finding] = lint_bundle(bundle, lambda _d, key: SCHEMAS.get(key))
    assert finding.code == "rule.unknown_alias" and finding.rule_id == "t.r"


def test_lint_says_local_time_compared_with_a_binding_never_holds() -> None:
    """The clock's local time is compared as minutes of the day, a bound "22:00" as text: the
    rule could never fire, and nothing said so."""
    SCHEMAS["sleep.bedtime"] = {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}
    try:
        bundle, _ = table({"fact": {"key": "sleep.bedtime", "as": "bed"}},
                          {"context": {"local_time": {"gt": "$bed"}}})  # fmt: skip
        [finding] = lint_bundle(bundle, lambda _d, key: SCHEMAS.get(key))
        assert finding.code == "rule.type_mismatch" and "never holds" in finding.message
        bundle, _ = table({"context": {"local_time": {"gt": "22:00"}}})
        assert lint_bundle(bundle, lambda _d, key: SCHEMAS.get(key)) == []
    finally:
        del SCHEMAS["sleep.bedtime"]
