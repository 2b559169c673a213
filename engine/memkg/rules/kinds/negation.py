"""``not``: holds when no message satisfies the wrapped condition (a ``fact`` or an ``edge``).

A negation is decided before matching, in Python, and handed to durable-rules as a flag on the
context message (``compiler.negation_flag``): durable-rules' own ``$not`` crashed its C core.
The condition it yields is the wrapped kind's, with ``negated`` set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memkg.rules.kinds import registry
from memkg.rules.kinds.base import ConditionKind
from memkg.rules.spec import Condition
from memkg.rules.text import value_text

if TYPE_CHECKING:
    from memkg.rules.snapshot import DecisionInput, Item
    from memkg.yamlfile import Document


class NotKind(ConditionKind):
    name = "not"

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        inner = {name: {"$ref": f"#/$defs/kind.{name}"} for name, k in kinds.items() if k.negatable}
        return {
            "description": "Holds when no fact (or edge) satisfies the inner test.",
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": False,
            "properties": inner,
        }

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        [(name, inner_body)] = body.items()
        inner = registry.get(name)
        if not inner.negatable:
            raise registry.UnknownConditionKind(
                f"`not` cannot wrap a {name!r} condition", code="rules.unknown_kind"
            )
        cond = inner.parse(doc, (*at, self.name), index, inner_body, {name: inner_body})
        return dataclasses.replace(cond, negated=True, raw=raw, line=doc.line(at))

    @staticmethod
    def found(cond: Condition, candidates: Sequence[Item]) -> str:
        """Why a negated ``cond`` failed: what it found."""
        shown = [value_text(i.value) for i in candidates][:3]
        return f"found {cond.key or cond.to}: {', '.join(shown)}"

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        return self.found(cond, candidates)
