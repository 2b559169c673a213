"""``context``: fields of the request context and of the clock (``local_time``, ``weekday``).

``- context: {symptom: fever, local_time: {outside: ["06:00", "22:00"]}}``; a plain value is
an equality. Context tests are part of the context pattern, so they bind no message; one whose
operand is an earlier binding (``wanted: $goal``) is compiled onto the bound message instead
(``compiler.split_context_joins``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memkg.rules.kinds.base import ConditionKind, LintScope, operand, parse_tests
from memkg.rules.kinds.checks import type_check
from memkg.rules.kinds.compare import CompileOperand, Resolve, passes, pattern
from memkg.rules.spec import BUILTIN_CONTEXT, Condition, DomainSpec, Finding, Ref, Test
from memkg.rules.text import describe_test, value_text

if TYPE_CHECKING:
    from memkg.rules.snapshot import DecisionInput, Item
    from memkg.yamlfile import Document

CONTEXT_PROPS = 6 + 2
"""Properties the context message carries besides the domain's fields, negation flags and
join copies: the built-in fields, ``sid`` and ``id``."""


def context_prop(field: str) -> str:
    """The context message property a field is compared on (times as minutes)."""
    return "local_minutes" if field == "local_time" else field


class ContextKind(ConditionKind):
    name = "context"
    message = None
    compares_values = True

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        ops: dict[str, Any] = {
            op: {"$ref": "#/$defs/operand"} for op in ("eq", "ne", "lt", "lte", "gt", "gte")
        }
        ops |= {"in": {"$ref": "#/$defs/values"}, "not_in": {"$ref": "#/$defs/values"}}
        ops |= {"exists": {"type": "boolean"}}
        ops |= {"between": {"$ref": "#/$defs/window"}, "outside": {"$ref": "#/$defs/window"}}
        return {
            "description": "field: value (equality) or field: "
            "{eq|ne|lt|lte|gt|gte|in|not_in|between|outside|exists: ...}",
            "type": "object",
            "minProperties": 1,
            "maxProperties": 16,
            "propertyNames": {"$ref": "#/$defs/name"},
            "additionalProperties": {
                "oneOf": [
                    {"$ref": "#/$defs/scalar"},
                    {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": False,
                        "properties": ops,
                    },
                ]
            },
        }

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        here = (*at, self.name)
        tests: list[Test] = []
        for name, spec in body.items():
            if isinstance(spec, dict):
                tests += parse_tests(doc, (*here, name), spec, name)
            else:
                tests.append(Test("eq", operand(spec), name, doc.line((*here, name))))
        return Condition(index, self.name, doc.line(at), raw, tests=tuple(tests))

    def pool_key(self, cond: Condition) -> Any:
        return None

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        return [pattern(t, context_prop(t.field or ""), compile_operand) for t in cond.tests]

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        return all(passes(t, props, context_prop(str(t.field)), resolve) for t in cond.tests)

    def describe(self, cond: Condition) -> str:
        return " and ".join(
            describe_test(t, "local time" if t.field == "local_time" else str(t.field))
            for t in cond.tests
        )

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        ctx = inp.items[-1].props
        shown = [
            f"{(t.field or '').replace('_', ' ')} is {value_text(ctx.get(t.field or ''))}"
            if t.field in ctx
            else f"{t.field} was not given"
            for t in cond.tests
        ]
        return "; ".join(dict.fromkeys(shown))

    def lint(self, scope: LintScope, cond: Condition) -> list[Finding]:
        # the context message's width is the table's (every `not` of it): ``lint`` checks it
        found: list[Finding] = []
        spec = scope.spec
        for field in sorted({t.field for t in cond.tests if t.field}):
            schema = context_schema(spec, field)
            if schema is None:
                found.append(
                    scope.finding("rule.unknown_context", undeclared(spec, field), cond.line)
                )
                continue
            for test in (t for t in cond.tests if t.field == field):
                found += type_check(scope, test, schema, f"context.{field}")
                if (
                    field == "local_time"
                    and isinstance(test.operand, Ref)
                    and test.operand.alias != "context"
                ):
                    # constants are read as minutes of the day; a bound value never is
                    found.append(scope.finding(
                        "rule.type_mismatch",
                        f"local_time is compared as a time of day, and {test.operand} is "
                        "not read as one, so this test never holds: compare local_time with "
                        'a constant ("22:00")',
                        test.line or cond.line,
                    ))  # fmt: skip
        return found


def context_schema(spec: DomainSpec | None, field: str) -> dict[str, Any] | None:
    """The schema of the request context field ``field``: built in, or declared by the
    domain; ``None`` when neither (a request carrying it is refused)."""
    return spec.context_schema(field) if spec else BUILTIN_CONTEXT.get(field)


def undeclared(spec: DomainSpec | None, field: str) -> str:
    """Why ``field`` cannot be read from a request's context (``rule.unknown_context``)."""
    names = sorted({*BUILTIN_CONTEXT, *(spec.context if spec else ())})
    return f"context field {field!r} is not declared; declared: {names}"
