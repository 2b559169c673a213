"""Report models: one `SchemaChange` per difference, gathered in a `CompatibilityReport`."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Direction = Literal["backward", "forward"]
Severity = Literal["breaking", "safe", "unknown"]


class Mode(StrEnum):
    """Compatibility modes, named as in schema registries."""

    BACKWARD = "backward"
    FORWARD = "forward"
    FULL = "full"
    BACKWARD_TRANSITIVE = "backward-transitive"
    FORWARD_TRANSITIVE = "forward-transitive"
    FULL_TRANSITIVE = "full-transitive"
    NONE = "none"

    @property
    def directions(self) -> tuple[Direction, ...]:
        """Directions this mode requires to hold."""
        base = self.value.removesuffix("-transitive")
        if base == "backward":
            return ("backward",)
        if base == "forward":
            return ("forward",)
        if base == "full":
            return ("backward", "forward")
        return ()

    @property
    def transitive(self) -> bool:
        return self.value.endswith("-transitive")


class SchemaChange(BaseModel):
    """One difference between two schema versions and the directions it breaks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    pointer: str
    breaks: tuple[Direction, ...]
    severity: Severity
    message: str
    fix_hint: str
    counterexample: Any = None
    counterexample_valid_under: Literal["old", "new"] | None = None
    against: int | None = None
    """Index of the earlier version compared with (transitive modes), else None."""


class CompatibilityReport(BaseModel):
    """Verdict of a compatibility check in one mode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode
    compatible: bool
    changes: tuple[SchemaChange, ...]
    undecided: bool
    work: int = 0
    """Work units the check spent (bounded by its budget)."""

    @property
    def breaking(self) -> tuple[SchemaChange, ...]:
        return tuple(c for c in self.changes if c.severity != "safe")

    def to_text(self) -> str:
        """Readable multi-line summary."""
        verdict = "compatible" if self.compatible else "INCOMPATIBLE"
        head = f"Schema change is {verdict} (mode: {self.mode.value})"
        if self.undecided:
            head += "; some parts could not be decided and were treated as breaking"
        lines = [head]
        if not self.changes:
            lines.append("  no differences that affect validation")
        for change in self.changes:
            where = change.pointer or "/"
            breaks = ", ".join(change.breaks) or "nothing"
            against = "" if change.against is None else f" [vs version {change.against}]"
            lines.append(
                f"- [{change.severity}] {change.code} at {where}{against}: {change.message}"
            )
            lines.append(f"    breaks: {breaks}")
            if change.counterexample_valid_under is not None:
                doc = json.dumps(change.counterexample, sort_keys=True, ensure_ascii=False)
                if len(doc) > 200:
                    doc = doc[:197] + "..."
                other = "new" if change.counterexample_valid_under == "old" else "old"
                lines.append(
                    f"    example: {doc} (valid under {change.counterexample_valid_under},"
                    f" rejected by {other})"
                )
            lines.append(f"    fix: {change.fix_hint}")
        return "\n".join(lines)
