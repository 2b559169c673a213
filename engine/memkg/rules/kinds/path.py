"""``path``: a weighted path in the contextual graph from the user to an entity.

``- path: {to: protocol:immediate_hospital_visit, via: condition:asthma, min_weight: 0.6}``;
a path's weight is its weakest hop (``memkg.model.evidence.GraphPath``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memkg.rules.kinds.base import WEIGHT_SCHEMA, ConditionKind, heavy_enough, weight_patterns
from memkg.rules.kinds.compare import CompileOperand, Resolve
from memkg.rules.spec import Condition
from memkg.rules.text import value_text

if TYPE_CHECKING:
    from memkg.rules.snapshot import DecisionInput, Item
    from memkg.yamlfile import Document


class PathKind(ConditionKind):
    name = "path"
    message = "path"

    def schema(self, kinds: Mapping[str, ConditionKind]) -> dict[str, Any]:
        return self.object_schema(
            ["to"],
            {"to": {"$ref": "#/$defs/entity"}, "via": {"$ref": "#/$defs/entity"},
             "min_weight": WEIGHT_SCHEMA},
        )  # fmt: skip

    def parse(
        self, doc: Document, at: tuple[Any, ...], index: int, body: Any, raw: dict[str, Any]
    ) -> Condition:
        return self.condition(doc, at, index, raw, alias=body.get("as"), to=body["to"],
                              via=body.get("via"), min_weight=body.get("min_weight"))  # fmt: skip

    def pool_key(self, cond: Condition) -> Any:
        return cond.to

    def paths(self, cond: Condition) -> tuple[tuple[str, str | None], ...]:
        return ((cond.to, cond.via),)

    def patterns(self, cond: Condition, compile_operand: CompileOperand) -> list[Any]:
        parts: list[Any] = [{"t": self.message}, {"to": compile_operand(cond.to)}]
        if cond.via is not None:
            parts.append({"via": cond.via})
        return parts + weight_patterns(cond)

    def matches(self, cond: Condition, props: dict[str, Any], resolve: Resolve) -> bool:
        if props.get("to") != cond.to:
            return False
        if cond.via is not None and props.get("via") != cond.via:
            return False
        return heavy_enough(cond, props)

    def describe(self, cond: Condition) -> str:
        text = f"path to {cond.to}" + (f" via {cond.via}" if cond.via else "")
        return text + (f" with weight ≥ {cond.min_weight:g}" if cond.min_weight is not None else "")

    def failure(self, cond: Condition, inp: DecisionInput, candidates: Sequence[Item]) -> str:
        if candidates:
            best = max(i.props["weight"] for i in candidates)
            return f"strongest path to {cond.to} has weight {best:.2f}"
        text = f"no path from the user to {cond.to}" + (f" via {cond.via}" if cond.via else "")
        gone = [lo for lo in inp.left_out if cond.via and cond.via in value_text(lo.value)]
        if gone:
            shown = "; ".join(
                f"{g.key} = {value_text(g.value)} left out: {g.reason}" for g in gone[:3]
            )
            text += f" ({shown})"
        return text
