"""Lint checks what a domain file names: its default decision is one of its tables."""

from __future__ import annotations

from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle
from memkg.rules.spec import Finding

TABLE = """\
hit_policy: first
default:
  then: {action: book}
  reason_code: D
  explain: x
rules: []
"""


def lint(domain: str, tables: dict[str, str]) -> list[Finding]:
    sources = {"t/domain.yaml": domain, **{f"t/{n}.yaml": text for n, text in tables.items()}}
    bundle, findings = load_bundle(sources)
    return findings + lint_bundle(bundle, lambda d, k: None)


def domain(default: str) -> str:
    return f"description: d\ndefault_decision: {default}\nactions:\n  book: {{description: b}}\n"


def test_a_default_decision_naming_no_table_is_a_finding_with_the_tables_there_are() -> None:
    [found] = lint(domain("sugestion"), {"suggestion": TABLE, "other": TABLE})
    assert found.code == "rule.unknown_decision"
    assert (found.file, found.line) == ("rules/t/domain.yaml", 2)
    assert "'sugestion'" in found.message and "['other', 'suggestion']" in found.message


def test_a_default_decision_naming_a_table_is_clean() -> None:
    assert lint(domain("suggestion"), {"suggestion": TABLE}) == []


def test_a_default_decision_in_a_domain_without_tables_is_a_finding() -> None:
    [found] = lint(domain("suggestion"), {})
    assert found.code == "rule.unknown_decision" and "no decision tables" in found.message


def test_a_default_decision_whose_table_does_not_load_has_that_finding_alone() -> None:
    # the table's own problem says what is wrong; "the domain has no decision tables" did not
    findings = lint(domain("suggestion"), {"suggestion": "hit_policy: first\nrules: [\n"})
    assert [f.code for f in findings] == ["rules.yaml"]


def test_a_default_decision_naming_the_domain_file_is_still_a_finding() -> None:
    # domain.yaml is among the sources but is no table: every decision asked for without
    # `decision` would be refused
    [found] = lint(domain("domain"), {"suggestion": TABLE})
    assert found.code == "rule.unknown_decision" and "'domain'" in found.message
