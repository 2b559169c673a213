"""Lint catches each class of rule error and points at file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg.roots import builtin
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle, read_sources
from memkg.rules.spec import Finding
from memkg.validate.registry import SchemaRegistry

REGISTRY = SchemaRegistry(builtin("examples") / "schemas")
DOMAIN = """\
actions:
  book: {description: book it}
  ask: {description: ask first}
context:
  symptom: {type: string, enum: [fever, cough]}
  amount: {type: number}
"""


def lint(table: str, domain: str = DOMAIN) -> list[Finding]:
    sources = {"health/domain.yaml": domain, "health/t.yaml": table}
    bundle, findings = load_bundle(sources)
    schema = lambda d, k: s.schema if (s := REGISTRY.spec(d, k)) else None  # noqa: E731
    return findings + lint_bundle(bundle, schema)


def only(findings: list[Finding], code: str) -> Finding:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, findings
    return found[0]


def rule(when: str, *, id_: str = "health.r", action: str = "book", explain: str = "x") -> str:
    return f"""\
  - id: {id_}
    when:
{when}
    then: {{action: {action}}}
    reason_code: R
    explain: "{explain}"
"""


HEAD = "hit_policy: first\nallow_no_match: true\nrules:\n"


def test_the_shipped_rules_are_clean() -> None:
    bundle, findings = load_bundle(read_sources(builtin("examples") / "rules"))
    schema = lambda d, k: s.schema if (s := REGISTRY.spec(d, k)) else None  # noqa: E731
    assert findings + lint_bundle(bundle, schema) == []


def test_schema_error_names_the_line() -> None:
    table = HEAD + "  - id: health.r\n    when: []\n    reason_code: R\n    explain: x\n"
    found = only(lint(table), "rule.schema")
    assert (found.file, found.line) == ("rules/health/t.yaml", 4)
    assert "'then' is a required property" in found.message


def test_yaml_syntax_error_names_the_line() -> None:
    found = only(lint(HEAD + "  - id: [unclosed\n"), "rules.yaml")
    assert found.file == "rules/health/t.yaml" and found.line == 5


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("  - id: &a health.r\n", "rules.yaml_alias"),
        ("  - id: !!python/name:os.system health.r\n", "rules.yaml_tag"),
        ("  - id: " + "[" * 100 + "]" * 100 + "\n", "rules.yaml_depth"),
        ("  - id: 0x1_0000_0000_0000_0000\n", "rules.yaml_number"),
        ('  - id: "\\0"\n', "rules.encoding"),
    ],
)
def test_a_refused_yaml_value_keeps_the_readers_code(text: str, code: str) -> None:
    """The README lists these codes; lint said ``rule.yaml`` for every one of them."""
    found = only(lint(HEAD + text), code)
    assert (found.file, found.line) == ("rules/health/t.yaml", 4)


def test_duplicate_ids() -> None:
    table = (
        HEAD + rule("      - context: {symptom: fever}") + rule("      - context: {symptom: cough}")
    )
    found = only(lint(table), "rule.duplicate_id")
    assert (
        found.line == 10
        and found.rule_id == "health.r"
        and "rules/health/t.yaml:4" in found.message
    )


def test_unknown_key() -> None:
    found = only(
        lint(HEAD + rule("      - fact: {key: child.shoe_size, gt: 30}")), "rule.unknown_key"
    )
    assert found.line == 6 and "child.shoe_size" in found.message


@pytest.mark.parametrize(
    ("condition", "words"),
    [
        ("fact: {key: child.age, lt: six}", "holds number values; comparing it with string"),
        ("fact: {key: symptom.current, gt: 3}", "holds string values; comparing it with number"),
        (
            "fact: {key: medical.conditions, eq: 'condition:asthma'}",
            "test its items with `contains`",
        ),
        ("context: {amount: {gte: lots}}", "holds number values"),
        ("context: {local_time: {outside: [6, 22]}}", 'write "HH:MM"'),
        ("fact: {key: symptom.current, lt: '12:00'}", "'12:00' is read as a time of day"),
        ("context: {symptom: {in: [cough, '09:00']}}", "'09:00' is read as a time of day"),
        ("context: {symptom: {outside: [a, m]}}", "between and outside compare numbers"),
    ],
)
def test_type_mismatch(condition: str, words: str) -> None:
    found = only(lint(HEAD + rule(f"      - {condition}")), "rule.type_mismatch")
    assert found.line == 6 and words in found.message


def test_unknown_value_and_field_and_context() -> None:
    findings = lint(
        HEAD
        + rule(
            "      - fact: {key: symptom.current, eq: feverish}\n"
            "      - fact: {key: bp.reading, field: pulse, gt: 100}\n"
            "      - context: {weather: rain}"
        )
    )
    assert only(findings, "rule.unknown_value").line == 6
    assert only(findings, "rule.unknown_field").line == 7
    assert only(findings, "rule.unknown_context").line == 8


def test_unknown_action_and_parameter() -> None:
    table = HEAD + rule("      - context: {symptom: fever}", action="teleport")
    found = only(lint(table), "rule.unknown_action")
    assert found.line == 4 and "teleport" in found.message


def test_unknown_alias_and_template() -> None:
    table = (
        HEAD
        + """\
  - id: health.r
    when:
      - fact: {key: child.age, lt: $nowhere}
    then: {action: book}
    reason_code: R
    explain: "{child.weight} kg"
"""
    )
    findings = lint(table)
    assert only(findings, "rule.unknown_alias").line == 6
    assert only(findings, "rule.template").line == 4


@pytest.mark.parametrize(
    ("negated", "names"),
    [("      - not: {fact: {key: child.age, lt: 2}}", ["child.age"]),
     ("      - not: {fact: {key: child.age, lt: 2, as: age}}", ["child.age", "age"])],
)  # fmt: skip
def test_a_placeholder_read_only_under_not_is_unbound(negated: str, names: list[str]) -> None:
    """A ``not`` condition binds nothing: ``{child.age}`` always read "(no child.age given)"."""
    when = "      - context: {symptom: fever}\n" + negated
    for name in names:
        found = only(lint(HEAD + rule(when, explain=f"age {{{name}}}")), "rule.template")
        assert found.line == 4 and f"{{{name}}}" in found.message
        assert "`not`" in found.message and "binds nothing" in found.message
    bound = when + "\n      - fact: {key: child.age, as: age}"
    assert [f for f in lint(HEAD + rule(bound, explain="{child.age} {age}"))
            if f.code == "rule.template"] == []  # fmt: skip


def test_explain_braces_that_are_not_placeholders_are_warned_about() -> None:
    """Nothing in an explanation is formatted: ``{age:.1f}`` would be printed as written."""
    table = HEAD + rule("      - fact: {key: child.age, as: age}",
                        explain="age {age:.1f} of {age} { }")  # fmt: skip
    found = [f for f in lint(table) if f.code == "rule.template"]
    assert [(f.severity, f.line) for f in found] == [("warning", 4)] * 2
    assert "'{age:.1f}'" in found[0].message and "printed as written" in found[0].message
    assert "'{ }'" in found[1].message
    clean = HEAD + rule("      - fact: {key: child.age, as: age}", explain="age {age}")
    assert [f for f in lint(clean) if f.code == "rule.template"] == []


def test_a_default_s_explain_is_not_filled_and_braces_in_it_are_warned_about() -> None:
    table = (
        HEAD.replace("allow_no_match: true\n", "")
        + rule("      - fact: {key: child.age, as: age}")
        + "default:\n  then: {action: book}\n  reason_code: D\n"
        + '  explain: "No preference for {airline} ({confidence:.0%})"\n'
    )
    found = [f for f in lint(table) if f.code == "rule.template"]
    assert [f.severity for f in found] == ["warning", "warning"]
    assert "'{airline}'" in found[0].message and "'{confidence:.0%}'" in found[1].message


def test_durable_rules_property_limit() -> None:
    fields = "".join(f"  f{i}: {{type: string}}\n" for i in range(260))
    domain = "actions:\n  book: {description: b}\ncontext:\n" + fields
    found = only(lint(HEAD + rule("      - context: {f1: x}"), domain), "rule.durable_limit")
    assert found.line == 6 and "at most 254" in found.message and "268 properties" in found.message


def test_overlap_under_unique() -> None:
    table = (
        "hit_policy: unique\nallow_no_match: true\nrules:\n"
        + rule("      - fact: {key: child.age, lt: 6}", id_="health.young")
        + rule("      - fact: {key: child.age, lt: 12}", id_="health.child")
        + rule("      - fact: {key: child.age, gte: 12}", id_="health.teen")
    )
    found = only(lint(table), "rule.overlap")
    assert (found.rule_id, found.line) == ("health.child", 10) and "health.young" in found.message


def test_exclusive_windows_and_joins_do_not_overlap() -> None:
    table = (
        "hit_policy: unique\nallow_no_match: true\nrules:\n"
        + rule("      - context: {local_time: {outside: ['06:00', '22:00']}}", id_="health.night")
        + rule("      - context: {local_time: {between: ['06:00', '22:00']}}", id_="health.day")
        + rule("      - fact: {key: child.age, lt: $context.amount}", id_="health.a")
        + rule("      - fact: {key: child.age, gte: $context.amount}", id_="health.b")
    )
    pairs = {(f.rule_id, f.message.split()[4]) for f in lint(table) if f.code == "rule.overlap"}
    assert ("health.day", "health.night") not in pairs
    assert ("health.b", "health.a") not in pairs
    assert ("health.a", "health.night") in pairs  # different subjects: both can hold


def test_missing_default() -> None:
    table = "hit_policy: first\nrules:\n" + rule("      - context: {symptom: fever}")
    found = only(lint(table), "rule.missing_default")
    assert found.line == 1 and "default" in found.message


def test_policy_files_beside_rules_are_not_rule_tables(tmp_path: Path) -> None:
    (tmp_path / "health").mkdir()
    (tmp_path / "health" / "questions.yaml").write_text("x: 1\n")
    (tmp_path / "health" / "t.cases.yaml").write_text("cases: []\n")
    assert read_sources(tmp_path) == {}


def test_a_rule_that_pairs_one_keys_values_is_a_warning() -> None:
    pairs = rule("      - fact: {key: medication.current}\n      - fact: {key: medication.current}")
    found = only(lint(HEAD + pairs), "rule.pairs")
    assert (found.severity, found.line, found.rule_id) == ("warning", 7, "health.r")
    assert "lines 6 and 7" in found.message and "n·(n−1)" in found.message
    joined = rule("      - fact: {key: medication.current, as: first}\n"
                  "      - fact: {key: medication.current, contains: $first}")  # fmt: skip
    other = rule("      - fact: {key: medication.current}\n      - fact: {key: medical.allergies}")
    negated = rule(
        "      - fact: {key: medication.current}\n"
        "      - not: {fact: {key: medication.current, contains: warfarin}}"
    )
    for clean in (joined, other, negated):
        assert lint(HEAD + clean) == [], clean


def test_an_enum_of_mixed_types_takes_no_ordered_test() -> None:
    """durable-rules ordered the string "720" above 5; the Python runner never matched it."""
    mixed = DOMAIN.replace("  amount: {type: number}", "  amount: {enum: [5, '720']}")
    found = only(
        lint(HEAD + rule("      - context: {amount: {gt: 5}}"), mixed), "rule.type_mismatch"
    )
    assert "number and string" in found.message and found.line == 6
    assert lint(HEAD + rule("      - context: {amount: '720'}"), mixed) == []
    assert lint(HEAD + rule("      - context: {amount: 5}"), mixed) == []


@pytest.mark.parametrize(
    ("condition", "code", "words"),
    [
        # an edge leads to one of the key's values: a `to` none can be never matches
        ("edge: {key: medical.conditions, to: 'allergen:peanut'}", "rule.unknown_value",
         "is not a value medical.conditions can take"),
        ("edge: {key: symptom.current, to: sneezing}", "rule.unknown_value", "sneezing"),
        ("edge: {key: symptom.current, to: 5}", "rule.type_mismatch", "holds string values"),
        # a request carrying an undeclared context field is refused: the join never holds
        ("fact: {key: symptom.current, eq: $context.weather}", "rule.unknown_context",
         "'weather' is not declared"),
    ],
)  # fmt: skip
def test_conditions_that_can_never_hold(condition: str, code: str, words: str) -> None:
    found = only(lint(HEAD + rule(f"      - {condition}")), code)
    assert found.line == 6 and words in found.message


@pytest.mark.parametrize(
    "condition",
    [
        "edge: {key: medical.conditions, to: 'condition:asthma'}",
        "edge: {key: symptom.current, to: $context.symptom}",
        "edge: {key: symptom.current}",
        "fact: {key: symptom.current, eq: $context.symptom}",
        "context: {local_time: {gte: $context.local_time}}",
    ],
)
def test_conditions_that_can_hold_pass(condition: str) -> None:
    assert lint(HEAD + rule(f"      - {condition}")) == []


def test_an_edge_on_a_key_that_names_no_entity_never_holds() -> None:
    # edges lead only to entities: a key without x-memkg.entity has none, `to` or not
    sources = {"health/domain.yaml": DOMAIN,
               "health/t.yaml": HEAD + rule("      - edge: {key: symptom.current}")
               + rule("      - edge: {key: medical.conditions}", id_="health.s")}  # fmt: skip
    bundle, findings = load_bundle(sources)
    schema = lambda d, k: s.schema if (s := REGISTRY.spec(d, k)) else None  # noqa: E731
    entities = lambda d, k: bool((s := REGISTRY.spec(d, k)) and s.entity)  # noqa: E731
    found = only(findings + lint_bundle(bundle, schema, None, entities), "rule.not_entity_key")
    assert found.rule_id == "health.r" and "symptom.current names no entity" in found.message


def test_equalities_to_two_request_fields_may_hold_together() -> None:
    """``eq: $context.a`` and ``eq: $context.b`` hold together when the request gives both
    fields one value: not shown apart (lint said nothing, and the decision was a
    hit_policy_violation); the same join on both sides still is."""
    table = (
        "hit_policy: unique\nallow_no_match: true\nrules:\n"
        + rule("      - fact: {key: child.age, eq: $context.amount}", id_="health.a")
        + rule("      - fact: {key: child.age, eq: $context.count}", id_="health.b")
        + rule("      - fact: {key: child.age, ne: $context.amount}", id_="health.c")
    )
    pairs = {(f.rule_id, f.message.split()[4]) for f in lint(table) if f.code == "rule.overlap"}
    assert ("health.b", "health.a") in pairs
    assert ("health.c", "health.a") not in pairs  # x = A and x ≠ A: exclusive
