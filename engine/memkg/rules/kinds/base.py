"""``ConditionKind``: everything one kind of rule condition means, in one class.

A kind (``fact``, ``edge``, ``path``, ``context``, ``not``, or one added later) owns, like a
pySHACL constraint component: the JSON Schema of its body in a rule file (``schema``), how the
body becomes a ``Condition`` (``parse``), its lint checks (``lint``), its durable-rules patterns
(``patterns``), its Python matching (``matches``, for the Python runner and ``why_not``) and its
description in words (``describe``, ``failure``). The registry (``memkg.rules.kinds``) maps the
names rule files use to kinds; nothing else branches on a kind's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from memkg.model.source import Sources
from memkg.rules.kinds.compare import CompileOperand, Resolve
from memkg.rules.spec import OPS, Condition, DomainSpec, Finding, Ref, Rule, RuleTable, Test

if TYPE_CHECKING:
    from memkg.rules.snapshot import DecisionInput, Item
    from memkg.yamlfile import Document

KeySchema = Callable[[str, str], dict[str, Any] | None]
"""``(domain, key)`` → the key's JSON value schema, or None when no schema declares it."""


@dataclass(frozen=True)
class LintScope:
    """Where a condition is linted: its table, rule, domain and the key schemas."""

    table: RuleTable
    rule: Rule
    spec: DomainSpec | None
    key_schema: KeySchema
    sources: Sources = field(default_factory=Sources)
    """The sources in force (``source:`` lists may name only these)."""
    names_entities: Callable[[str, str], bool] | None = None
    """``(domain, key)`` → whether the key's values name entities (``x-memkg.entity``): only
    those lead to graph edges. ``None``: not known here, not checked."""

    def finding(self, code: str, message: str, line: int | None = None) -> Finding:
        return Finding(code, message, self.rule.file, line or self.rule.line, self.rule.id)


def operand(value: Any) -> Any:
    """``$name`` / ``$name.field`` → ``Ref``; lists → tuples; anything else as is."""
    if isinstance(value, str) and value.startswith("$") and len(value) > 1:
        alias, _, field = value[1:].partition(".")
        return Ref(alias, field or None)
    if isinstance(value, list):
        return tuple(value)
    return value


def parse_tests(
    doc: Document, at: tuple[Any, ...], raw: dict[str, Any], field: str | None
) -> list[Test]:
    """The comparisons written in ``raw`` (``eq: 3``, ``in: [...]``...), in ``OPS`` order."""
    return [Test(op, operand(raw[op]), field, doc.line((*at, op))) for op in OPS if op in raw]


class ConditionKind:
    """One kind of condition; subclasses set the class attributes and override the methods."""

    name: ClassVar[str]
    """The name rule files write (``- fact: {...}``)."""
    message: ClassVar[str | None] = None
    """The message type it reads (``fact``, ``edge``, ``path``); None: the request context,
    tested inside the context pattern."""
    negatable: ClassVar[bool] = False
    """Whether ``not:`` may wrap it."""
    compares_values: ClassVar[bool] = False
    """Whether its tests constrain one value per subject (overlap analysis may use them)."""

    @property
    def on_context(self) -> bool:
        return self.message is None

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        """The JSON Schema of the body; may ``$ref`` the rule file's shared ``$defs``."""
        raise NotImplementedError

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        """``body`` (valid against ``schema``) at ``at`` in ``doc`` → a ``Condition``."""
        raise NotImplementedError

    def pool_key(self, cond: Condition) -> Any:
        """The value messages of type ``message`` are indexed by that ``cond`` reads."""
        return cond.key

    def paths(self, cond: Condition) -> tuple[tuple[str, str | None], ...]:
        """The (to, via) graph paths the condition needs computed."""
        return ()

    def ref_prop(self, cond: Condition, field: str | None) -> str:
        """The message property that ``$alias.field`` reads when ``alias`` names ``cond``."""
        return "to"

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        """The durable-rules tests of one message matching ``cond`` (an ``$and`` list)."""
        raise NotImplementedError

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        """Whether message ``props`` satisfies ``cond`` (``resolve`` gives joined operands)."""
        raise NotImplementedError

    def describe(self, cond: Condition) -> str:
        """The condition in words (without its negation)."""
        raise NotImplementedError

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        """Why ``cond`` (not negated) failed on ``candidates``, in words."""
        raise NotImplementedError

    def lint(self, scope: LintScope, cond: Condition) -> list[Finding]:
        """Problems of ``cond`` that the JSON Schema cannot see."""
        return []

    # helpers for kinds whose body is a mapping that may bind an alias (``as``)

    @staticmethod
    def object_schema(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
        """A body schema: these properties plus ``as``, nothing else."""
        return {
            "type": "object",
            "required": required,
            "additionalProperties": False,
            "properties": {**properties, "as": {"$ref": "#/$defs/name"}},
        }

    def condition(
        self, doc: Document, at: tuple[Any, ...], index: int, raw: dict[str, Any], **fields: Any
    ) -> Condition:
        """A condition of this kind at ``at``; ``fields`` hold ``alias`` and what it tests."""
        return Condition(index, self.name, doc.line(at), raw, **fields)


WEIGHT_SCHEMA = {"type": "number", "minimum": 0, "maximum": 1}


def weight_patterns(cond: Condition) -> list[Any]:
    """``min_weight`` for durable-rules."""
    return [] if cond.min_weight is None else [{"$gte": {"weight": cond.min_weight}}]


def heavy_enough(cond: Condition, props: dict[str, Any]) -> bool:
    """``min_weight`` in Python."""
    return cond.min_weight is None or props["weight"] >= cond.min_weight
