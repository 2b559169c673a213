"""Condition kinds: the registry refuses unknown kinds, and a new kind is one class.

``KnownKind`` below is a whole new kind (``- known: child.age``: the user has some value for the
key): registering it makes rule files accept it, lint it, compile it for durable-rules, match
it in Python, and describe it, with no other change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from memkg.rules import kinds
from memkg.rules.compiler import compile_table, ruleset_name
from memkg.rules.durable_runner import DurableRunner
from memkg.rules.evaluator import Evaluator
from memkg.rules.kinds import ConditionKind, LintScope
from memkg.rules.kinds.checks import declared_key
from memkg.rules.kinds.compare import CompileOperand, Resolve
from memkg.rules.kinds.fact import keyed_failure
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle
from memkg.rules.python_runner import PythonRuleRunner
from memkg.rules.snapshot import DecisionInput, Item
from memkg.rules.spec import Condition, Finding
from memkg.yamlfile import Document

DOMAIN = "actions: {go: {description: go}}\n"
TABLE = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.known
    when:
      - known: child.age
    then: {action: go}
    reason_code: KNOWN
    explain: "age known: {child.age}"
  - id: t.unknown_key
    when:
      - known: no.such_key
    then: {action: go}
    reason_code: NEVER
    explain: x
"""


class KnownKind(ConditionKind):
    name = "known"
    message = "fact"
    negatable = True

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        return {"$ref": "#/$defs/key"}

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        return Condition(index, self.name, doc.line(at), raw, key=body)

    def ref_prop(self, cond: Condition, field: str | None) -> str:
        return "value"

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        return [{"t": "fact"}, {"key": cond.key}]

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        return props.get("key") == cond.key

    def describe(self, cond: Condition) -> str:
        return f"some {cond.key} is on record"

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        return keyed_failure(cond, inp, candidates, f"{cond.key} is", "fact")

    def lint(self, scope: LintScope, cond: Condition) -> list[Finding]:
        return declared_key(scope, cond.key or "", cond.line)[1]


@pytest.fixture
def known() -> Iterator[None]:
    kinds.register(KnownKind())
    yield
    kinds.unregister("known")


def _input(messages: list[dict[str, Any]]) -> DecisionInput:
    from datetime import UTC, datetime

    items = tuple(Item(f"m{i}", m["t"], m) for i, m in enumerate(messages))
    now = datetime(2026, 5, 1, tzinfo=UTC)
    return DecisionInput("u", "t", now, "UTC", items[-1].props, (), (), (), items=items)


CTX = {"t": "context", "today": 20260501, "local_minutes": 600, "weekday": "fri"}
AGE = {"t": "fact", "key": "child.age", "value": 4, "source": "profile", "confidence": 1.0}


def test_an_unknown_kind_is_refused_with_its_line() -> None:
    table = TABLE.replace("known: child.age", "flies: child.age")
    _, findings = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": table})
    assert [(f.code, f.line) for f in findings][:1] == [("rule.schema", 6)]
    with pytest.raises(kinds.UnknownConditionKind) as caught:
        kinds.get("flies")
    assert caught.value.code == "rules.unknown_kind"


def test_a_kind_the_file_schema_lets_through_is_still_an_error(tmp_path: Any) -> None:
    import json
    import shutil

    from memkg.roots import builtin

    shutil.copytree(builtin("core") / "schemas" / "rules", tmp_path / "schemas" / "rules")
    path = tmp_path / "schemas" / "rules" / "rule-file.schema.json"
    schema = json.loads(path.read_text())
    del schema["$defs"]["condition"]  # a root whose schema accepts any condition
    schema["$defs"]["rule"]["properties"]["when"] = {"type": "array"}
    path.write_text(json.dumps(schema))
    table = TABLE.replace("known: child.age", "flies: child.age")
    bundle, findings = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": table}, root=tmp_path)
    assert [(f.code, f.line) for f in findings] == [("rule.unknown_kind", 6)]
    assert ("t", "x") not in bundle.tables


@pytest.mark.usefixtures("known")
def test_a_new_kind_is_parsed_linted_compiled_matched_and_described() -> None:
    bundle, findings = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": TABLE})
    assert findings == []
    schemas = {"child.age": {"type": "integer"}}
    linted = lint_bundle(bundle, lambda domain, key: schemas.get(key))
    assert [(f.code, f.rule_id) for f in linted] == [("rule.unknown_key", "t.unknown_key")]
    table = bundle.tables[("t", "x")]
    durable = DurableRunner({ruleset_name(table): compile_table(table)})
    python = PythonRuleRunner.for_tables([table])
    for runner in (durable, python):
        result = Evaluator(bundle, runner).evaluate(table, _input([AGE, CTX]), walk_all=True)
        assert [c.rule_id for c in result.candidates] == ["t.known"]
        assert result.candidates[0].message == "age known: 4"
        assert result.fired[0].conditions[0].text == "some child.age is on record"
    missing = Evaluator(bundle, python).evaluate(table, _input([CTX]), walk_all=True)
    assert missing.candidates == ()
    assert [c.failing for c in missing.checks] == [0, 0]


@pytest.mark.usefixtures("known")
def test_a_new_negatable_kind_can_be_negated() -> None:
    negated = TABLE.replace("- known: child.age", "- not: {known: child.age}")
    bundle, findings = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": negated})
    assert findings == []
    table = bundle.tables[("t", "x")]
    assert table.rules[0].conditions[0].negated
    for runner in (DurableRunner({ruleset_name(table): compile_table(table)}),
                   PythonRuleRunner.for_tables([table])):  # fmt: skip
        evaluator = Evaluator(bundle, runner)
        assert [c.rule_id for c in evaluator.evaluate(table, _input([CTX])).candidates] == [
            "t.known"
        ]
        assert evaluator.evaluate(table, _input([AGE, CTX])).candidates == ()
