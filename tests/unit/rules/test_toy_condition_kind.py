"""A condition kind added from outside memkg: ``within``, defined and registered in this test only.

``- within: {key: room.temperature, low: 18, high: 22}`` holds for a numeric fact of the key in
``[low, high]``. One class and one ``kinds.register`` call make rule files accept it; it is then
parsed, linted, compiled for durable-rules, matched by the Python runner, described in words
(also in ``why_not``), negated with ``not:``, used by an ``Engine`` over a test root, and both
runners agree on it for generated rules and evidence.

A kind keeps what it tests in ``Condition`` fields that ``Condition.signature`` covers (here two
``Test``\\ s), so two ``within`` conditions with different bounds are never taken for one test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg import Engine, FrozenClock
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.rules import kinds, spec
from memkg.rules.compiler import compile_table, ruleset_name
from memkg.rules.durable_runner import DurableRunner
from memkg.rules.evaluator import Evaluator
from memkg.rules.kinds import ConditionKind, LintScope
from memkg.rules.kinds.checks import declared_key
from memkg.rules.kinds.compare import CompileOperand, Resolve
from memkg.rules.kinds.fact import keyed_failure
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle
from memkg.rules.matcher import check_rule, pools
from memkg.rules.python_runner import PythonRuleRunner
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import Condition, Finding, RuleBundle, RuleTable
from memkg.rules.text import value_text
from memkg.yamlfile import Document
from support.observations import T0


class WithinKind(ConditionKind):
    """``within: {key, low, high, as}``: a numeric fact of ``key`` from ``low`` to ``high``."""

    name = "within"
    message = "fact"
    negatable = True

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        bound = {"type": "number"}
        return self.object_schema(
            ["key", "low", "high"], {"key": {"$ref": "#/$defs/key"}, "low": bound, "high": bound}
        )

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        here = (*at, self.name)
        tests = (
            spec.Test("gte", body["low"], None, doc.line((*here, "low"))),
            spec.Test("lte", body["high"], None, doc.line((*here, "high"))),
        )
        return self.condition(
            doc, at, index, raw, alias=body.get("as"), key=body["key"], tests=tests
        )

    @staticmethod
    def bounds(cond: Condition) -> tuple[float, float]:
        low, high = cond.tests
        return low.operand, high.operand

    def ref_prop(self, cond: Condition, field: str | None) -> str:
        return "value"

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        low, high = self.bounds(cond)
        return [
            {"t": "fact"},
            {"key": cond.key},
            {"$gte": {"value": low}},
            {"$lte": {"value": high}},
        ]

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        low, high = self.bounds(cond)
        value = props.get("value")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return props.get("key") == cond.key and number and low <= value <= high

    def describe(self, cond: Condition) -> str:
        low, high = self.bounds(cond)
        return f"{cond.key} is within {value_text(low)}..{value_text(high)}"

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        return keyed_failure(cond, inp, candidates, f"{cond.key} is", "fact")

    def lint(self, scope: LintScope, cond: Condition) -> list[Finding]:
        schema, found = declared_key(scope, cond.key or "", cond.line)
        low, high = self.bounds(cond)
        if schema is not None and schema.get("type") not in ("integer", "number"):
            found.append(
                scope.finding(
                    "rule.type_mismatch", f"{cond.key} is not a number: `within` cannot apply"
                )
            )
        if low > high:
            found.append(
                scope.finding(
                    "rule.empty_range",
                    f"within {low}..{high} is empty: low exceeds high",
                    cond.tests[0].line,
                )
            )
        return found


@pytest.fixture
def within() -> Iterator[None]:
    kinds.register(WithinKind())  # the one registration call
    yield
    kinds.unregister("within")


DOMAIN = """\
description: Room climate.
default_decision: climate
actions:
  keep: {description: Keep the temperature as it is}
  cool_down: {description: Cool the room}
  warm_up: {description: Warm the room}
context:
  season: {type: string, enum: [summer, winter]}
"""
TABLE = """\
description: What to do about the room temperature.
hit_policy: first
allow_no_match: true
rules:
  - id: home.comfortable
    description: A comfortable room stays as it is.
    when:
      - within: {key: room.temperature, low: 18, high: 22}
    then: {action: keep}
    reason_code: COMFORTABLE
    explain: "{room.temperature} degrees is comfortable"
  - id: home.too_hot
    description: A hot room in summer is cooled.
    when:
      - context: {season: summer}
      - within: {key: room.temperature, low: 26, high: 40, as: hot}
    then: {action: cool_down}
    reason_code: TOO_HOT
    explain: "{hot} degrees is too hot"
  - id: home.not_warm
    description: Anything not comfortable or hot is warmed.
    when:
      - not: {within: {key: room.temperature, low: 18, high: 40}}
    then: {action: warm_up}
    reason_code: TOO_COLD
    explain: "too cold"
"""
SCHEMAS = {"room.temperature": {"type": "number"}, "room.label": {"type": "string"}}


def _schema(domain: str, key: str) -> dict[str, Any] | None:
    return SCHEMAS.get(key)


def _bundle(table: str = TABLE) -> tuple[RuleBundle, RuleTable]:
    bundle, findings = load_bundle({"home/domain.yaml": DOMAIN, "home/climate.yaml": table})
    assert findings == []
    return bundle, bundle.tables[("home", "climate")]


def _input(messages: list[dict[str, Any]]) -> DecisionInput:
    context = {
        "t": "context",
        "today": 20260501,
        "local_minutes": 600,
        "weekday": "fri",
        "season": "summer",
    }
    items = tuple(Item(f"m{i}", m["t"], m) for i, m in enumerate([*messages, context]))
    return DecisionInput("u", "home", T0, "UTC", items[-1].props, (), (), (), items=items)


def _temperature(value: Any, n: int = 0) -> dict[str, Any]:
    return {
        "t": "fact",
        "key": "room.temperature",
        "value": value,
        "source": "behavior",
        "confidence": 1.0,
        "n": n,
    }


def _runners(table: RuleTable) -> tuple[DurableRunner, PythonRuleRunner]:
    return DurableRunner({ruleset_name(table): compile_table(table)}), PythonRuleRunner.for_tables(
        [table]
    )


def test_without_registration_a_rule_file_using_it_is_refused() -> None:
    _, findings = load_bundle({"home/domain.yaml": DOMAIN, "home/climate.yaml": TABLE})
    assert {f.code for f in findings} == {"rule.schema"}


@pytest.mark.usefixtures("within")
def test_it_is_parsed_compiled_and_described() -> None:
    bundle, table = _bundle()
    comfortable, too_hot, not_warm = table.rules
    cond = comfortable.conditions[0]
    assert (cond.kind, cond.key, WithinKind.bounds(cond)) == (
        "within",
        "room.temperature",
        (18, 22),
    )
    assert too_hot.conditions[1].alias == "hot"
    assert not_warm.conditions[0].negated
    # two within conditions with other bounds are two tests, not one
    assert cond.signature != too_hot.conditions[1].signature
    compiled = json.dumps(compile_table(table))
    assert '{"$gte": {"value": 18}}' in compiled and '{"$lte": {"value": 22}}' in compiled
    assert lint_bundle(bundle, _schema) == []


@pytest.mark.usefixtures("within")
def test_its_lint_checks_run_with_file_and_line() -> None:
    table = TABLE.replace("low: 18, high: 22}", "low: 30, high: 22}").replace(
        "low: 26, high: 40, as: hot}", "low: 1, high: 2, as: hot}"
    )
    bundle, _ = _bundle(table)
    wrong = {"room.temperature": {"type": "string"}}
    findings = lint_bundle(bundle, _schema)
    assert [(f.code, f.line, f.rule_id) for f in findings] == [
        ("rule.empty_range", 8, "home.comfortable")
    ]
    typed = lint_bundle(bundle, lambda d, k: wrong.get(k))
    assert {f.code for f in typed} >= {"rule.type_mismatch", "rule.empty_range"}


@pytest.mark.usefixtures("within")
@pytest.mark.parametrize(
    ("value", "fired", "why_not"),
    [
        (20, "home.comfortable", {"home.too_hot": "room.temperature is 20"}),
        (30, "home.too_hot", {}),
        (10, "home.not_warm", {"home.too_hot": "room.temperature is 10"}),
    ],
)
def test_both_runners_match_it_and_why_not_says_it_in_words(
    value: float, fired: str, why_not: dict[str, str]
) -> None:
    bundle, table = _bundle()
    results = []
    for runner in _runners(table):
        result = Evaluator(bundle, runner).evaluate(
            table, _input([_temperature(value)]), walk_all=True
        )
        texts = {f.rule_id: [c.text for c in f.conditions] for f in result.fired}
        failing = {w.rule_id: (w.failing.text, w.failing.failure) for w in result.why_not}
        results.append((texts, failing))
    assert results[0] == results[1]
    texts, failing = results[0]
    assert list(texts) == [fired]
    assert texts.get("home.comfortable", ["room.temperature is within 18..22"]) == [
        "room.temperature is within 18..22"
    ]
    assert texts.get("home.not_warm", ["not (room.temperature is within 18..40)"]) == [
        "not (room.temperature is within 18..40)"
    ]
    assert failing == {
        r: ("room.temperature is within 26..40", said) for r, said in why_not.items()
    }


def _evidence(values: list[float]) -> DecisionInput:
    return _input([_temperature(v, n) for n, v in enumerate(values)])


bounds = st.integers(-5, 45)


@st.composite
def generated_table(draw: st.DrawFn) -> str:
    rules = []
    for index in range(draw(st.integers(1, 4))):
        low, high = sorted((draw(bounds), draw(bounds)))
        within = f"within: {{key: room.temperature, low: {low}, high: {high}}}"
        when = [f"{{not: {{{within}}}}}" if draw(st.booleans()) else f"{{{within}}}"]
        if draw(st.booleans()):
            when.append(f"{{fact: {{key: room.temperature, gte: {draw(bounds)}}}}}")
        rules.append(
            f"  - id: home.r{index}\n    when: [{', '.join(when)}]\n"
            f"    then: {{action: keep}}\n    reason_code: R{index}\n    explain: r{index}\n"
        )
    return (
        "hit_policy: {collect: {action: keep, aggregate: count}}\nallow_no_match: true\n"
        "rules:\n" + "".join(rules)
    )


@pytest.mark.usefixtures("within")
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(generated_table(), st.lists(st.one_of(bounds, st.floats(-5, 45)), max_size=3))
def test_both_runners_and_the_why_not_walk_agree_on_generated_rules(
    table_text: str, values: list[float]
) -> None:
    bundle, table = _bundle(table_text)
    durable, python = _runners(table)
    inp = _evidence(values)
    evaluator, twin = Evaluator(bundle, durable), Evaluator(bundle, python)
    messages = evaluator.messages(table, inp)
    by_durable = sorted(
        (f.rule, sorted(f.bound.items())) for f in durable.run(ruleset_name(table), messages)
    )
    by_python = sorted(
        (f.rule, sorted(f.bound.items())) for f in python.run(ruleset_name(table), messages)
    )
    assert by_python == by_durable
    names = {rule for rule, _ in by_durable}
    for rule in table.rules:
        walked = check_rule(rule, inp, pools(inp.items)).failing is None
        assert walked == (f"r{rule.index}" in names), (rule.id, values)
    one, other = evaluator.evaluate(table, inp), twin.evaluate(table, inp)
    assert (one.candidates, one.fired, one.why_not) == (
        other.candidates,
        other.fired,
        other.why_not,
    )


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "schemas" / "home").mkdir(parents=True)
    (root / "rules" / "home").mkdir(parents=True)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://memkg.dev/schemas/home/room@1.json",
        "title": "home / room",
        "x-memkg": {"domain": "home", "group": "room", "version": 1},
        "type": "object",
        "properties": {
            "room.temperature": {
                "type": "number",
                "x-memkg": {
                    "kind": "preference",
                    "sensitivity": "public",
                    "consent": False,
                    "multi": False,
                },
            }
        },
        "additionalProperties": False,
    }
    (root / "schemas" / "home" / "room@1.json").write_text(json.dumps(schema))
    (root / "rules" / "home" / "domain.yaml").write_text(DOMAIN)
    (root / "rules" / "home" / "climate.yaml").write_text(TABLE)
    (root / "rules" / "home" / "climate.cases.yaml").write_text(
        'cases:\n  - name: hot\n    now: "2026-05-01T09:00:00Z"\n'
        "    facts: [{key: room.temperature, value: 20}]\n    context: {season: summer}\n"
        "    expect: {action: keep, why_not: {home.too_hot: 1}}\n"
    )
    return root


@pytest.mark.usefixtures("within")
def test_an_engine_over_a_root_decides_and_explains_with_it(tmp_path: Path, capsys: Any) -> None:
    root = _root(tmp_path)
    config = EngineConfig(roots=(root,), examples=False)
    with Engine(config=config, clock=FrozenClock(T0)) as engine:
        engine.ingest(
            {
                "user_id": "ana",
                "domain": "home",
                "key": "room.temperature",
                "value": 20,
                "source": "behavior",
            }
        )
        made = engine.decide("ana", "home", {"season": "summer"})
        assert made.result.action == "keep"
        text = engine.explain(made.decision_id)
        assert "room.temperature is within 18..22" in text
        [why] = made.explanation.why_not
        assert (why.rule_id, why.failing.text, why.failing.failure) == (
            "home.too_hot",
            "room.temperature is within 26..40",
            "room.temperature is 20",
        )
        assert "room.temperature is within 26..40" in text
        assert engine.replay(made.decision_id).reproduced
    for command in ("lint", "test"):
        assert main(["--root", str(root), "--no-examples", "rules", command]) == 0
    capsys.readouterr()
