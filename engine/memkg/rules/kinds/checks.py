"""Lint checks several condition kinds share: does a test fit the schema of what it reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memkg.errors import PatternTimeout
from memkg.rules.kinds.base import LintScope
from memkg.rules.kinds.compare import minutes
from memkg.rules.spec import Finding, Ref, Test
from memkg.userschema import validator

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

MAX_PROPERTIES = 254
"""The most properties one message sent to durable-rules may hold, counting the names of the
objects in it (at any depth; not inside lists), ``sid`` and ``id``: its C core keeps them in a
table of 255 and crashed the process on a message that filled it (measured on 2.0.28)."""
_ORDERED = ("lt", "lte", "gt", "gte", "between", "outside")


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def type_check(scope: LintScope, test: Test, schema: dict[str, Any], subject: str) -> list[Finding]:
    """Whether ``test`` can ever be true of a value valid against ``schema``."""
    if test.op == "exists":
        return []
    declared = schema.get("type")
    line = test.line or scope.rule.line
    if declared is None and "enum" in schema:
        kinds = sorted({json_type(v) for v in schema["enum"]})
        if len(kinds) > 1 and test.op in _ORDERED:
            # durable-rules orders a string against a number, the Python runner never does
            return [scope.finding("rule.type_mismatch", f"{subject} takes {' and '.join(kinds)} "
                                  f"values; {test.op} compares one type: make its enum one "
                                  "type", line)]  # fmt: skip
        declared = kinds[0] if len(kinds) == 1 else None
    declared = "number" if declared in ("integer", "number") else declared
    values = list(test.operand) if isinstance(test.operand, tuple) else [test.operand]
    time_like = subject == "context.local_time"
    if test.op in ("between", "outside") and declared == "string" and not time_like:
        return [  # durable-rules would order the strings, the Python runner never matches
            scope.finding(
                "rule.type_mismatch",
                f"{subject} holds strings; between and outside compare numbers "
                '(and context.local_time as "HH:MM")',
                line,
            )
        ]
    for value in values:
        if isinstance(value, Ref):
            continue
        if time_like and not (isinstance(value, str) and len(value) == 5 and value[2] == ":"):
            return [
                scope.finding(
                    "rule.type_mismatch",
                    f'{subject} compares times: write "HH:MM", not {value!r}',
                    line,
                )
            ]
        if declared == "string" and not time_like and minutes(value) != value:
            return [
                scope.finding(
                    "rule.type_mismatch",
                    f"{subject} holds strings; {value!r} is read as a time of day (a number "
                    "of minutes), which only context.local_time is compared with",
                    line,
                )
            ]
        actual = json_type(value)
        if declared is not None and actual != declared:
            return [
                scope.finding(
                    "rule.type_mismatch",
                    f"{subject} holds {declared} values; "
                    f"comparing it with {actual} {value!r} can never be true",
                    line,
                )
            ]
        if test.op in _ORDERED and declared not in ("number", "string"):
            return [
                scope.finding("rule.type_mismatch", f"{subject} ({declared}) has no order", line)
            ]
        equality = test.op in ("eq", "ne", "in", "not_in", "contains")
        if equality and not time_like and not fits(schema, value):
            return [
                scope.finding(
                    "rule.unknown_value",
                    f"{value!r} is not a value {subject} can take ({_allowed(schema)})",
                    line,
                )
            ]
    return []


def fits(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` fits ``schema``; a pattern that runs out of time on it says no."""
    return passes(validator(schema), value)


def passes(check: Validator, value: Any) -> bool:
    """Whether ``value`` passes a built validator (a pattern out of time on it: no)."""
    try:
        return bool(check.is_valid(value))
    except PatternTimeout:
        return False


def _allowed(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if "pattern" in schema:
        return f"pattern {schema['pattern']}"
    return f"schema {schema}"


def declared_key(
    scope: LintScope, key: str, line: int
) -> tuple[dict[str, Any] | None, list[Finding]]:
    """The schema of ``key`` in the table's domain, or the finding that none declares it."""
    schema = scope.key_schema(scope.table.domain, key)
    if schema is None:
        return None, [
            scope.finding(
                "rule.unknown_key",
                f"no schema of domain {scope.table.domain!r} declares key {key!r}",
                line,
            )
        ]
    return schema, []
