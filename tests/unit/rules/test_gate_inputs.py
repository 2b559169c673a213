"""Broken domain files and unreadable characters are findings with file, line and code."""

from __future__ import annotations

import pytest

from memkg import Engine, EngineConfig
from memkg.engine.rule_bundle import lint_sources
from memkg.roots import builtin

ENGINE = Engine(config=EngineConfig(shacl=False))
DOMAIN = (builtin("examples") / "rules/finance/domain.yaml").read_text(encoding="utf-8")
RULE = (builtin("examples") / "rules/finance/suitability.yaml").read_text(encoding="utf-8")
AMOUNT = "amount: {type: number, minimum: 0}"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ("{type: string, pattern: {a: 1}}", "context.amount.pattern: not a valid JSON Schema"),
        ("{type: number, minimum: 'x'}", "context.amount.minimum: not a valid JSON Schema"),
        ("{type: numbr}", "context.amount.type: not a valid JSON Schema"),
        ("{type: string, pattern: '(('}", "context.amount.pattern: not a valid JSON Schema"),
    ],
)
def test_a_broken_context_schema_is_a_finding(schema: str, says: str) -> None:
    assert AMOUNT in DOMAIN
    domain = DOMAIN.replace(AMOUNT, f"amount: {schema}")
    line = domain.splitlines().index(f"  amount: {schema}") + 1
    _, findings = lint_sources({"finance/domain.yaml": domain, "finance/x.yaml": RULE}, ENGINE)
    [found] = [f for f in findings if f.code == "rule.schema"]
    assert found.message.startswith(says) and (found.file, found.line) == (
        "rules/finance/domain.yaml", line)  # fmt: skip


def test_a_nul_character_is_a_finding_on_its_line() -> None:
    rule = RULE.replace("rules:", "rules:\x00", 1)
    line = rule[: rule.index("\x00")].count("\n") + 1
    _, findings = lint_sources({"finance/domain.yaml": DOMAIN, "finance/x.yaml": rule}, ENGINE)
    [found] = [f for f in findings if f.file == "rules/finance/x.yaml"]
    assert (found.code, found.line) == ("rules.encoding", line)
    assert "U+0000 is not allowed" in found.message
