"""Checks a rule bundle before it is used; every problem names file, line and rule.

Codes: ``rule.schema`` / ``rule.yaml`` (from the loader), ``rule.duplicate_id``,
``rule.unknown_key``, ``rule.unknown_field``, ``rule.type_mismatch``, ``rule.unknown_value``,
``rule.unknown_context``, ``rule.unknown_alias``, ``rule.unknown_action``,
``rule.unknown_parameter``, ``rule.invalid_parameter``, ``rule.priority``, ``rule.aggregate``,
``rule.template``, ``rule.effective``, ``rule.durable_limit``, ``rule.overlap``,
``rule.missing_default``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from memkg.rules.overlap import overlap_findings
from memkg.rules.spec import (
    BUILTIN_CONTEXT,
    Condition,
    DomainSpec,
    Finding,
    Ref,
    Rule,
    RuleBundle,
    RuleTable,
    Test,
)
from memkg.rules.text import placeholders

KeySchema = Callable[[str, str], dict[str, Any] | None]
"""``(domain, key)`` → the key's JSON value schema, or None when no schema declares it."""
MAX_PROPERTIES = 255
"""durable-rules refuses a message with more properties."""
_FIXED = {"fact": 5, "edge": 4, "path": 4, "context": 6}
_ORDERED = ("lt", "lte", "gt", "gte", "between", "outside")


def lint_bundle(bundle: RuleBundle, key_schema: KeySchema) -> list[Finding]:
    findings: list[Finding] = []
    seen: dict[str, Rule] = {}
    for (domain, _), table in sorted(bundle.tables.items()):
        spec = bundle.domains.get(domain)
        for rule in table.rules:
            if rule.id in seen:
                first = seen[rule.id]
                findings.append(
                    _at(
                        rule,
                        "rule.duplicate_id",
                        f"id also used at {first.file}:{first.line}; rule ids must be unique",
                    )
                )
            seen.setdefault(rule.id, rule)
            findings += _lint_rule(table, rule, spec, key_schema)
        findings += _lint_table(table, spec)
        if table.hit_policy.kind == "unique":
            keys = {c.key for r in table.rules for c in r.conditions if c.key}
            multi = {k for k in keys if (key_schema(domain, k) or {}).get("type") == "array"}
            findings += overlap_findings(table, multi)
    return sorted(findings, key=lambda f: (f.file, f.line, f.code))


def _at(rule: Rule, code: str, message: str, line: int | None = None) -> Finding:
    return Finding(code, message, rule.file, line or rule.line, rule.id)


def _lint_table(table: RuleTable, spec: DomainSpec | None) -> list[Finding]:
    found: list[Finding] = []
    policy = table.hit_policy
    where = (table.file, table.policy_line)
    actions = set(spec.actions) if spec else set()
    listed = [*policy.priority, *([policy.action] if policy.action else [])]
    for action in listed:
        if spec is not None and action not in actions:
            found.append(
                Finding(
                    "rule.unknown_action",
                    f"hit policy names {action!r}, which {spec.file} does not declare",
                    *where,
                )
            )
    if policy.kind == "priority":
        for rule in table.rules:
            if rule.output.action not in policy.priority:
                found.append(
                    _at(
                        rule,
                        "rule.priority",
                        f"action {rule.output.action!r} is not in "
                        "the priority list, so it can never be ranked",
                    )
                )
    if policy.kind == "collect" and policy.aggregate in ("sum", "min", "max"):
        for rule in table.rules:
            value = rule.output.parameters.get(policy.of or "")
            if not isinstance(value, int | float) or isinstance(value, bool):
                found.append(
                    _at(
                        rule,
                        "rule.aggregate",
                        f"collect {policy.aggregate} of "
                        f"{policy.of!r}: this rule gives no number for it",
                    )
                )
    catch_all = any(not rule.conditions for rule in table.rules)
    if table.default is None and not catch_all and not table.allow_no_match:
        found.append(
            Finding(
                "rule.missing_default",
                "no rule matches every input, so a request "
                "can match none: add `default:` (or `allow_no_match: true`)",
                *where,
            )
        )
    if table.default is not None and spec is not None:
        found += _lint_output(table, None, table.default.output, spec, table.default.line)
    return found


def _lint_output(
    table: RuleTable, rule: Rule | None, output: Any, spec: DomainSpec, line: int
) -> list[Finding]:
    rule_id = rule.id if rule else None
    action = spec.actions.get(output.action)
    if action is None:
        return [
            Finding(
                "rule.unknown_action",
                f"action {output.action!r} is not declared in "
                f"{spec.file}; declared: {sorted(spec.actions)}",
                table.file,
                line,
                rule_id,
            )
        ]
    found = []
    for name, value in output.parameters.items():
        schema = action.parameters.get(name)
        if schema is None:
            found.append(
                Finding(
                    "rule.unknown_parameter",
                    f"{output.action} takes no parameter {name!r}",
                    table.file,
                    line,
                    rule_id,
                )
            )
        elif not Draft202012Validator(schema).is_valid(value):
            found.append(
                Finding(
                    "rule.invalid_parameter",
                    f"{name}={value!r} does not fit {output.action}'s schema {schema}",
                    table.file,
                    line,
                    rule_id,
                )
            )
    return found


def _lint_rule(
    table: RuleTable, rule: Rule, spec: DomainSpec | None, key_schema: KeySchema
) -> list[Finding]:
    found: list[Finding] = []
    if spec is not None:
        found += _lint_output(table, rule, rule.output, spec, rule.line)
    if rule.effective_from and rule.effective_until and rule.effective_from > rule.effective_until:
        found.append(_at(rule, "rule.effective", "effective `from` is after `until`"))
    aliases: dict[str, Condition] = {}
    for cond in rule.conditions:
        for ref in cond.refs:
            target = aliases.get(ref.alias)
            if cond.negated and ref.alias != "context":
                found.append(
                    _at(
                        rule,
                        "rule.unknown_alias",
                        f"{ref}: a `not` condition may join "
                        "only the request context ($context.field)",
                        cond.line,
                    )
                )
            elif ref.alias != "context" and (target is None or target.negated):
                found.append(
                    _at(
                        rule,
                        "rule.unknown_alias",
                        f"{ref} names no earlier condition with `as: " + ref.alias + "`",
                        cond.line,
                    )
                )
        if cond.kind == "context":
            found += _lint_context(rule, cond, spec)
        elif cond.key is not None:
            found += _lint_key(table, rule, cond, key_schema)
        if cond.alias:
            if cond.alias in aliases or cond.alias == "context":
                found.append(
                    _at(
                        rule, "rule.unknown_alias", f"alias {cond.alias!r} is used twice", cond.line
                    )
                )
            aliases[cond.alias] = cond
    known = {c.key for c in rule.conditions if c.key} | {c.to for c in rule.conditions if c.to}
    known |= set(aliases) | set(BUILTIN_CONTEXT) | set(spec.context if spec else ())
    for name in placeholders(rule.explain):
        if name.removeprefix("context.") not in known:
            found.append(
                _at(
                    rule,
                    "rule.template",
                    f"explain names {{{name}}}, which no "
                    "condition binds and the context does not hold",
                )
            )
    return found


def _lint_context(rule: Rule, cond: Condition, spec: DomainSpec | None) -> list[Finding]:
    found: list[Finding] = []
    fields = {t.field for t in cond.tests}
    negations = sum(c.negated for c in rule.conditions)
    declared = 6 + len(spec.context if spec else ()) + 2 + negations
    if declared > MAX_PROPERTIES:
        found.append(
            _at(
                rule,
                "rule.durable_limit",
                f"the context would carry {declared} "
                f"properties; durable-rules allows {MAX_PROPERTIES}",
                cond.line,
            )
        )
    for field in sorted(f for f in fields if f):
        schema = spec.context_schema(field) if spec else BUILTIN_CONTEXT.get(field)
        if schema is None:
            declared_names = sorted({*BUILTIN_CONTEXT, *(spec.context if spec else ())})
            found.append(
                _at(
                    rule,
                    "rule.unknown_context",
                    f"context field {field!r} is not declared; declared: {declared_names}",
                    cond.line,
                )
            )
            continue
        for test in (t for t in cond.tests if t.field == field):
            found += _type_check(rule, test, schema, f"context.{field}")
    return found


def _lint_key(
    table: RuleTable, rule: Rule, cond: Condition, key_schema: KeySchema
) -> list[Finding]:
    key = cond.key or ""
    schema = key_schema(table.domain, key)
    if schema is None:
        return [
            _at(
                rule,
                "rule.unknown_key",
                f"no schema of domain {table.domain!r} declares key {key!r}",
                cond.line,
            )
        ]
    if cond.kind == "edge":
        return []
    found: list[Finding] = []
    if len(schema.get("properties", {})) + _FIXED["fact"] > MAX_PROPERTIES:
        found.append(
            _at(
                rule,
                "rule.durable_limit",
                f"{key} values have more properties than durable-rules allows ({MAX_PROPERTIES})",
                cond.line,
            )
        )
    for test in cond.tests:
        sub = schema
        if test.field is not None:
            sub = schema.get("properties", {}).get(test.field)
            if schema.get("type") != "object" or sub is None:
                found.append(
                    _at(
                        rule,
                        "rule.unknown_field",
                        f"{key} has no field {test.field!r}",
                        test.line or cond.line,
                    )
                )
                continue
        if schema.get("type") == "array" and test.field is None:
            if test.op != "contains":
                found.append(
                    _at(
                        rule,
                        "rule.type_mismatch",
                        f"{key} is a list: test its items with `contains`, not `{test.op}`",
                        test.line or cond.line,
                    )
                )
                continue
            sub = schema.get("items", {})
        elif test.op == "contains":
            found.append(
                _at(
                    rule,
                    "rule.type_mismatch",
                    f"{key} is not a list: `contains` cannot apply",
                    test.line or cond.line,
                )
            )
            continue
        found += _type_check(rule, test, sub, key + (f".{test.field}" if test.field else ""))
    return found


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def _type_check(rule: Rule, test: Test, schema: dict[str, Any], subject: str) -> list[Finding]:
    if test.op == "exists":
        return []
    declared = schema.get("type")
    if declared is None and "enum" in schema:
        declared = _json_type(schema["enum"][0]) if schema["enum"] else None
    declared = "number" if declared in ("integer", "number") else declared
    values = list(test.operand) if isinstance(test.operand, tuple) else [test.operand]
    line = test.line or rule.line
    time_like = subject == "context.local_time"
    for value in values:
        if isinstance(value, Ref):
            continue
        if time_like and not (isinstance(value, str) and len(value) == 5 and value[2] == ":"):
            return [
                _at(
                    rule,
                    "rule.type_mismatch",
                    f'{subject} compares times: write "HH:MM", not {value!r}',
                    line,
                )
            ]
        actual = _json_type(value)
        if declared is not None and actual != declared:
            return [
                _at(
                    rule,
                    "rule.type_mismatch",
                    f"{subject} holds {declared} values; "
                    f"comparing it with {actual} {value!r} can never be true",
                    line,
                )
            ]
        if test.op in _ORDERED and declared not in ("number", "string"):
            return [_at(rule, "rule.type_mismatch", f"{subject} ({declared}) has no order", line)]
        equality = test.op in ("eq", "ne", "in", "not_in", "contains")
        if equality and not time_like and not Draft202012Validator(schema).is_valid(value):
            return [
                _at(
                    rule,
                    "rule.unknown_value",
                    f"{value!r} is not a value {subject} can take ({_allowed(schema)})",
                    line,
                )
            ]
    return []


def _allowed(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "pattern" in schema:
        return f"pattern {schema['pattern']}"
    return f"schema {schema}"
