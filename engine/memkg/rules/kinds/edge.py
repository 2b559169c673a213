"""``edge``: a weighted edge from the user through a key to an entity.

``- edge: {key: airline.preferred, to: airline:mu, min_weight: 0.6}``; ``to`` may join
(``$alias``, ``$context.field``); without it any target matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memkg.rules.kinds.base import (
    WEIGHT_SCHEMA,
    ConditionKind,
    LintScope,
    heavy_enough,
    operand,
    weight_patterns,
)
from memkg.rules.kinds.checks import declared_key, type_check
from memkg.rules.kinds.compare import WILDCARD, CompileOperand, Resolve, compare
from memkg.rules.kinds.fact import keyed_failure
from memkg.rules.spec import Condition, Finding, Ref, Test
from memkg.rules.text import value_text

if TYPE_CHECKING:
    from memkg.rules.snapshot import DecisionInput, Item
    from memkg.yamlfile import Document


class EdgeKind(ConditionKind):
    name = "edge"
    message = "edge"
    negatable = True

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        return self.object_schema(
            ["key"],
            {"key": {"$ref": "#/$defs/key"}, "to": {"$ref": "#/$defs/operand"},
             "min_weight": WEIGHT_SCHEMA},
        )  # fmt: skip

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        to, weight = operand(body.get("to")), body.get("min_weight")
        return self.condition(doc, at, index, raw, alias=body.get("as"), key=body["key"],
                              to=to, min_weight=weight)  # fmt: skip

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        parts: list[Any] = [{"t": self.message}, {"key": cond.key}]
        if cond.to is not None:
            parts.append({"to": compile_operand(cond.to)})
        return parts + weight_patterns(cond)

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        if props.get("key") != cond.key:
            return False
        to = resolve(cond.to) if cond.to is not None else WILDCARD
        if not compare("eq", props.get("to"), to):
            return False
        return heavy_enough(cond, props)

    def describe(self, cond: Condition) -> str:
        body = f"edge {cond.key} → {value_text(cond.to) if cond.to is not None else 'anything'}"
        if cond.min_weight is not None:
            body += f" with weight ≥ {cond.min_weight:g}"
        return body

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        return keyed_failure(cond, inp, candidates, "edges lead to", "edge")

    def lint(self, scope: LintScope, cond: Condition) -> list[Finding]:
        schema, found = declared_key(scope, cond.key or "", cond.line)
        entities = scope.names_entities
        if (
            schema is not None
            and entities is not None
            and not entities(scope.table.domain, cond.key or "")
        ):
            never = scope.finding(
                "rule.not_entity_key", f"{cond.key} names no entity (its schema declares no "
                "x-memkg.entity): edges lead only to entities, so this condition never holds; "
                "test the value with a `fact` condition", cond.line)  # fmt: skip
            return [*found, never]
        if schema is None or cond.to is None or isinstance(cond.to, Ref):
            return found
        # an edge leads to one of the key's values (an item of a list): a ``to`` no value of
        # the key can be never matches (a number key, a value outside its enum)
        target = schema.get("items", {}) if schema.get("type") == "array" else schema
        if target.get("type") in ("object", "array"):
            return found
        test = Test("eq", cond.to, None, cond.line)
        return found + type_check(scope, test, target, cond.key or "")
