"""What a request context, or a fact value, can do to the matchers: a message wider than
durable-rules' C core holds fails the run with a memkg error (it crashed the process), and a
domain may not declare a context field under a name every message already carries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkg.rules.compiler import compile_table, ruleset_name
from memkg.rules.durable_runner import MAX_MESSAGE_PROPERTIES, DurableRunner
from memkg.rules.loader import load_bundle
from memkg.rules.python_runner import PythonRuleRunner
from memkg.rules.runner import RuleEvaluationError

DOMAIN = """\
actions: {go: {description: go}}
context: {o: {type: object}, n: {type: number}}
"""
RULES = [
    {"id": "g.ctx", "when": [{"context": {"o": {"exists": True}}}]},
    {"id": "g.fact", "when": [{"fact": {"key": "a.o", "field": "k1", "eq": 1}}]},
    {"id": "g.none", "when": [{"not": {"fact": {"key": "a.n"}}}]},
]
CTX = {"t": "context", "today": 20260501, "timezone": "UTC", "local_time": "12:00",
       "local_minutes": 720, "weekday": "fri", "not_2_0": 1}  # fmt: skip
"""The context as the evaluator sends it (with rule 2's negation flag): 7 properties, and the
runner adds ``sid`` and ``id``."""


def _table(rules: list[dict[str, Any]]) -> Any:
    full = [{**r, "then": {"action": "go"}, "reason_code": "R", "explain": "x"} for r in rules]
    table = {"hit_policy": "first", "allow_no_match": True, "rules": full}
    bundle, problems = load_bundle({"g/domain.yaml": DOMAIN, "g/t.yaml": json.dumps(table)})
    assert problems == []
    return bundle.tables[("g", "t")]


def _runners(rules: list[dict[str, Any]] = RULES) -> tuple[DurableRunner, PythonRuleRunner]:
    table = _table(rules)
    return DurableRunner({ruleset_name(table): compile_table(table)}), PythonRuleRunner.for_tables(
        [table]
    )


def _fired(runner: Any, messages: list[dict[str, Any]]) -> list[str]:
    return sorted(f.rule for f in runner.run("g.t", messages))


def _wide(names: int) -> dict[str, Any]:
    return {f"k{i}": 1 for i in range(names)}


@pytest.mark.parametrize(
    "value",
    [
        _wide(MAX_MESSAGE_PROPERTIES - 9),  # one name past: 255 crashed the C core
        _wide(400),
        {f"k{i}": {"x": 1} for i in range(123)},  # names of nested objects count too
        {"a": {"b": _wide(244)}},
    ],
    ids=["one-past", "wide", "nested", "deep"],
)
def test_a_context_wider_than_durable_rules_holds_fails_the_run(value: Any) -> None:
    durable, _ = _runners()
    with pytest.raises(RuleEvaluationError) as refused:
        durable.run("g.t", [{**CTX, "o": value}])
    assert "the request context" in str(refused.value)
    assert f"at most {MAX_MESSAGE_PROPERTIES}" in str(refused.value)
    assert _fired(durable, [CTX]) == ["r2"]  # the runner still works


def test_a_context_as_wide_as_durable_rules_holds_is_matched() -> None:
    durable, python = _runners()
    widest = [{**CTX, "o": _wide(MAX_MESSAGE_PROPERTIES - 10)}]  # 7 + o + its names + sid, id
    assert _fired(durable, widest) == _fired(python, widest) == ["r0", "r2"]


def test_a_fact_wider_than_durable_rules_holds_fails_the_run() -> None:
    durable, _ = _runners()
    wide = {"t": "fact", "key": "a.o", "value": _wide(300), "source": "profile",
            "confidence": 1.0}  # fmt: skip
    for batch in ([wide, CTX], [{**wide, "value": {"k1": 1}}, wide, CTX]):
        with pytest.raises(RuleEvaluationError) as refused:
            durable.run("g.t", batch)
        assert "fact a.o" in str(refused.value)
    assert _fired(durable, [{**wide, "value": {"k1": 1}}, CTX]) == ["r1", "r2"]


def test_negation_flags_count_toward_the_width_of_the_context() -> None:
    rules = [{"id": f"g.n{i}", "when": [{"not": {"fact": {"key": "a.n", "eq": i}}}]}
             for i in range(250)]  # fmt: skip
    durable, _ = _runners(rules)
    flags = {f"not_{i}_0": 1 for i in range(250)}
    with pytest.raises(RuleEvaluationError):
        durable.run("g.t", [{**CTX, **flags}])


@pytest.mark.parametrize("name", ["t", "id", "sid"])
def test_a_domain_may_not_declare_a_context_field_every_message_carries(name: str) -> None:
    """``t`` sent as ``fact`` made the context a fact message (durable-rules then fired
    nothing and failed the run, the Python runner fired); ``id`` and ``sid`` are replaced
    by the runner's own before durable-rules compares them."""
    domain = DOMAIN.replace("n: {type: number}", f"{name}: {{type: string}}")
    table = {"hit_policy": "first", "allow_no_match": True,
             "rules": [{"id": "g.r", "when": [{"context": {name: "x"}}], "then": {"action": "go"},
                        "reason_code": "R", "explain": "x"}]}  # fmt: skip
    bundle, problems = load_bundle({"g/domain.yaml": domain, "g/t.yaml": json.dumps(table)})
    reserved = [p for p in problems if p.code == "rule.reserved_context"]
    assert len(reserved) == 1 and f"context.{name}" in reserved[0].message
    assert reserved[0].file == "rules/g/domain.yaml" and reserved[0].line == 2
    assert "g" not in bundle.domains


@pytest.mark.parametrize("names", [MAX_MESSAGE_PROPERTIES - 10, MAX_MESSAGE_PROPERTIES - 9])
def test_both_runners_refuse_a_message_alike(names: int) -> None:
    """The twin counts a message as durable-rules would receive it: the one the C core holds
    is matched by both, the one past it refused by both (the twin fired on it)."""
    durable, python = _runners()
    batch = [{**CTX, "o": _wide(names)}]
    if names == MAX_MESSAGE_PROPERTIES - 10:
        assert _fired(durable, batch) == _fired(python, batch) == ["r0", "r2"]
        return
    for runner in (durable, python):
        with pytest.raises(RuleEvaluationError):
            runner.run("g.t", batch)
