"""``fact``: a remembered value of a key, tested by comparisons, confidence and source.

``- fact: {key: child.age, lt: 6}``; ``field`` tests a field of an object value, ``match``
several fields for equality, ``contains`` one item of a list (list facts are one message per
item), ``min_confidence`` and ``source`` where the fact came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memkg.model.source import SOURCE_PATTERN
from memkg.rules.kinds.base import ConditionKind, LintScope, operand, parse_tests
from memkg.rules.kinds.checks import MAX_PROPERTIES, declared_key, type_check
from memkg.rules.kinds.compare import CompileOperand, Resolve, passes, pattern
from memkg.rules.spec import Condition, Finding, Test
from memkg.rules.text import describe_test, value_text

if TYPE_CHECKING:
    from memkg.rules.snapshot import DecisionInput, Item
    from memkg.yamlfile import Document

_MESSAGE_PROPS = 5 + 2
"""Properties every fact message carries besides its value's fields: ``t``, ``key``,
``value``, ``confidence``, ``source``, and the runner's ``sid`` and ``id``."""


def keyed_failure(
    cond: Condition, inp: DecisionInput, candidates: Sequence[Item], found: str, noun: str
) -> str:
    """What a keyed condition found instead, or that nothing usable was there and why."""
    if candidates:
        values = sorted({value_text(i.value) for i in candidates})[:5]
        return f"{found} {', '.join(values)}"
    if any(f.key == cond.key and f.value == [] for f in inp.facts):
        return f"{cond.key} is {value_text([])}"  # the value held is an explicit "none"
    gone = [lo for lo in inp.left_out if lo.key == cond.key]
    text = f"no usable {cond.key} {noun}"
    if gone:
        text += " (left out: " + ", ".join(sorted({g.reason for g in gone})) + ")"
    return text


class FactKind(ConditionKind):
    name = "fact"
    message = "fact"
    negatable = True
    compares_values = True

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        ops = {
            op: {"$ref": "#/$defs/operand"}
            for op in ("contains", "eq", "ne", "lt", "lte", "gt", "gte")
        }
        return self.object_schema(
            ["key"],
            {
                "key": {"$ref": "#/$defs/key"},
                "field": {"$ref": "#/$defs/name"},
                "min_confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "source": {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"type": "string", "pattern": SOURCE_PATTERN},
                },
                **ops,
                "in": {"$ref": "#/$defs/values"},
                "not_in": {"$ref": "#/$defs/values"},
                "match": {
                    "description": "field: value of an object value, all equal "
                    "(a value may be $alias.field or $context.field)",
                    "type": "object",
                    "minProperties": 1,
                    "propertyNames": {"$ref": "#/$defs/name"},
                    "additionalProperties": {"$ref": "#/$defs/operand"},
                },
            },
        )

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        here = (*at, self.name)
        matches = [
            Test("eq", operand(v), name, doc.line((*here, "match", name)))
            for name, v in body.get("match", {}).items()
        ]
        return self.condition(
            doc,
            at,
            index,
            raw,
            alias=body.get("as"),
            key=body["key"],
            field=body.get("field"),
            tests=tuple(parse_tests(doc, here, body, body.get("field")) + matches),
            min_confidence=body.get("min_confidence"),
            sources=tuple(body.get("source", ())),
        )

    def ref_prop(self, cond: Condition, field: str | None) -> str:
        field = field or cond.field
        return f"value.{field}" if field else "value"

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        prop = self.ref_prop(cond, None)
        parts: list[Any] = [{"t": self.message}, {"key": cond.key}]
        parts += [
            pattern(t, f"value.{t.field}" if t.field else prop, compile_operand) for t in cond.tests
        ]
        if cond.min_confidence is not None:
            parts.append({"$gte": {"confidence": cond.min_confidence}})
        if cond.sources:
            options = [{"source": s} for s in cond.sources]
            parts.append(options[0] if len(options) == 1 else {"$or": options})
        return parts

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        if props.get("key") != cond.key:
            return False
        prop = self.ref_prop(cond, None)
        for t in cond.tests:
            if not passes(t, props, f"value.{t.field}" if t.field else prop, resolve):
                return False
        if cond.min_confidence is not None and props["confidence"] < cond.min_confidence:
            return False
        return not cond.sources or props["source"] in cond.sources

    def describe(self, cond: Condition) -> str:
        parts = [
            describe_test(t, f"{cond.key}.{t.field}" if t.field else str(cond.key))
            for t in cond.tests
        ]
        body = " and ".join(parts) if parts else f"{cond.key} is known"
        if cond.min_confidence is not None:
            body += f" (confidence ≥ {cond.min_confidence:g})"
        if cond.sources:
            body += f" (from {' or '.join(cond.sources)})"
        return body

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        return keyed_failure(cond, inp, candidates, f"{cond.key} is", "fact")

    def lint(self, scope: LintScope, cond: Condition) -> list[Finding]:
        key = cond.key or ""
        unknown = [s for s in cond.sources if s not in scope.sources]
        schema, found = declared_key(scope, key, cond.line)
        if unknown:
            found.insert(0, scope.finding("rule.unknown_source", scope.sources.unknown(unknown[0]),
                                          cond.line))  # fmt: skip
        if schema is None:
            return found
        if len(schema.get("properties", {})) + _MESSAGE_PROPS > MAX_PROPERTIES:
            found.append(
                scope.finding(
                    "rule.durable_limit",
                    f"{key} values have more properties than durable-rules allows "
                    f"({MAX_PROPERTIES})",
                    cond.line,
                )
            )
        for test in cond.tests:
            found += self._lint_test(scope, cond, key, schema, test)
        return found

    @staticmethod
    def _lint_test(
        scope: LintScope, cond: Condition, key: str, schema: dict[str, Any], test: Test
    ) -> list[Finding]:
        line = test.line or cond.line
        sub = schema
        if test.field is not None:
            sub = schema.get("properties", {}).get(test.field)
            if schema.get("type") != "object" or sub is None:
                return [
                    scope.finding("rule.unknown_field", f"{key} has no field {test.field!r}", line)
                ]
        if schema.get("type") == "array" and test.field is None:
            if test.op != "contains":
                return [
                    scope.finding(
                        "rule.type_mismatch",
                        f"{key} is a list: test its items with `contains`, not `{test.op}`",
                        line,
                    )
                ]
            sub = schema.get("items", {})
        elif test.op == "contains":
            return [
                scope.finding(
                    "rule.type_mismatch", f"{key} is not a list: `contains` cannot apply", line
                )
            ]
        return type_check(scope, test, sub, key + (f".{test.field}" if test.field else ""))
