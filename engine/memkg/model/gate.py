"""What the two change gates share, the schema migration dry run and the rules diff: a
finding's severity, the verdict, its exit status, and how findings make the verdict.

Policy, in order: a finding of severity ``block`` not excused (waived by a waiver file, or
allowed by the caller's list of intended changes) blocks; a warning, or an excused block,
warns; otherwise the change passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["block", "warn", "info"]
Verdict = Literal["PASS", "WARN", "BLOCK"]
EXIT_STATUS: dict[Verdict, int] = {"PASS": 0, "WARN": 0, "BLOCK": 3}
SEVERITY_ORDER: dict[Severity, int] = {"block": 0, "warn": 1, "info": 2}


class GateFinding(BaseModel):
    """One thing a gate found; ``subject`` is what it is about (a fact, rule or decision id),
    ``file`` and ``line`` where to look."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    severity: Severity
    message: str
    subject: str | None = None
    file: str | None = None
    line: int | None = None

    @property
    def excused(self) -> bool:
        """A block the gate's owner said to let through (it then only warns)."""
        return False


def verdict_of(findings: Iterable[GateFinding]) -> Verdict:
    """The verdict ``findings`` make, by the policy above."""
    found = list(findings)
    if any(f.severity == "block" and not f.excused for f in found):
        return "BLOCK"
    if any(f.severity == "warn" or f.excused for f in found):
        return "WARN"
    return "PASS"
