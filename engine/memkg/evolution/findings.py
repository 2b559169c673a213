"""Findings of the subset check and the per-direction context that names them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .expand import Case
from .normalize import Node, Unconfirmable
from .report import Direction

MAX_CANDIDATES = 4


@dataclass
class Finding:
    """A place where A ⊆ B may fail; `candidates` are instances in A and not in B at this level."""

    code: str
    pointer: str
    message: str
    hint: str
    candidates: list[Any] = field(default_factory=list)
    unknown_code: str | None = None
    """Code to report when no counterexample gets confirmed (an `undecidable.*` code)."""


@dataclass
class Ctx:
    """Direction of the check (A is old for backward) and recursion bookkeeping."""

    direction: Direction
    depth: int = 0
    stack: dict[tuple[Any, ...], int] = field(default_factory=dict)
    steps: int = 0

    def code(self, backward: str, forward: str | None = None) -> str:
        """Name a change old→new: `backward` when A is old, else `forward`."""
        return backward if self.direction == "backward" or forward is None else forward

    def old_new(self, a: Any, b: Any) -> tuple[Any, Any]:
        return (a, b) if self.direction == "backward" else (b, a)

    def where(self, a_ptr: str | None, b_ptr: str | None) -> str:
        """Pointer on the new side when it has one, else on the old side."""
        new, old = (b_ptr, a_ptr) if self.direction == "backward" else (a_ptr, b_ptr)
        return new if new is not None else (old or "")

    def deeper(self) -> Ctx:
        return Ctx(self.direction, self.depth + 1, self.stack, self.steps)


def in_a_not_b(candidates: list[Any], case: Case, b: Node) -> list[Any]:
    """Candidates valid under every node of `case` and invalid under `b`, deduplicated."""
    out: list[Any] = []
    seen: set[str] = set()
    for value in candidates:
        key = repr(value)
        if key in seen:
            continue
        seen.add(key)
        try:
            if case.contains(value) and not b.is_valid(value):
                out.append(value)
        except Unconfirmable:
            continue
        if len(out) >= MAX_CANDIDATES:
            break
    return out


def rewrap(findings: list[Finding], wrap: Any, case: Case, b: Node) -> list[Finding]:
    """Lift child findings to this level: `wrap(value)` embeds a child candidate in a parent one."""
    for finding in findings:
        lifted: list[Any] = []
        for value in finding.candidates:
            lifted.extend(wrap(value))
        finding.candidates = in_a_not_b(lifted, case, b)
    return findings
