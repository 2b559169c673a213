"""Check a schema change in a schema-registry compatibility mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import SchemaError
from .findings import Ctx
from .normalize import Document, Node
from .report import CompatibilityReport, Direction, Mode, SchemaChange
from .subset import subset
from .witness import confirm, unresolvable_refs

_RANK = {"breaking": 0, "unknown": 1, "safe": 2}


def check_schema_change(
    old: dict[str, Any] | bool | Sequence[dict[str, Any] | bool],
    new: dict[str, Any] | bool,
    mode: str = "backward",
) -> CompatibilityReport:
    """Compare `new` with the earlier version(s) `old` (oldest first) under `mode`.

    backward: documents valid under old stay valid under new; forward: the reverse; full:
    both; the `-transitive` variants check against every earlier version, the others against
    the last one; none: always compatible (changes are still listed).
    """
    try:
        chosen = Mode(mode)
    except ValueError as exc:
        names = ", ".join(m.value for m in Mode)
        raise SchemaError(f"unknown compatibility mode {mode!r}; use one of {names}") from exc
    if isinstance(old, (dict, bool)):
        olds: list[Any] = [old]
    elif isinstance(old, Sequence) and not isinstance(old, (str, bytes)):
        olds = list(old)
        if not olds:
            raise SchemaError("no earlier schema version given")
    else:
        raise SchemaError(
            f"old schema must be an object, a boolean or a list of them, got {type(old).__name__}"
        )
    new_doc = Document(new, "new")
    old_docs = [Document(s, "old" if len(olds) == 1 else f"old[{i}]") for i, s in enumerate(olds)]
    indexes = range(len(olds)) if chosen.transitive else [len(olds) - 1]
    changes: list[SchemaChange] = []
    for index in indexes:
        against = index if chosen.transitive and len(olds) > 1 else None
        changes.extend(_compare(old_docs[index], new_doc, chosen, against))
    changes.sort(key=lambda c: (_RANK[c.severity], c.against or 0, c.pointer, c.code))
    undecided = any(c.severity == "unknown" for c in changes)
    compatible = chosen is Mode.NONE or all(c.severity == "safe" for c in changes)
    return CompatibilityReport(
        mode=chosen, compatible=compatible, changes=tuple(changes), undecided=undecided
    )


def _compare(old: Document, new: Document, mode: Mode, against: int | None) -> list[SchemaChange]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for direction in ("backward", "forward"):
        inside, outside = (old, new) if direction == "backward" else (new, old)
        ctx = Ctx(direction)
        found = subset(ctx, [Node(inside, inside.root, "")], Node(outside, outside.root, ""))
        for finding in found:
            ok, example = confirm(finding, inside, outside)
            code = finding.code if ok else (finding.unknown_code or finding.code)
            message = (
                finding.message
                if ok
                else (f"{finding.message} (no counterexample confirmed; treated as breaking)")
            )
            if code == "ref.unresolvable":
                continue
            entry = merged.setdefault(
                (code, finding.pointer),
                {
                    "message": message,
                    "hint": finding.hint,
                    "proven": [],
                    "open": [],
                    "example": None,
                    "under": None,
                },
            )
            (entry["proven"] if ok else entry["open"]).append(direction)
            if ok and entry["under"] is None:
                entry["example"] = example
                entry["under"] = "old" if direction == "backward" else "new"
    for label, doc in (("old", old), ("new", new)):
        for ptr, ref in unresolvable_refs(doc):
            entry = merged.setdefault(
                ("ref.unresolvable", ptr),
                {
                    "message": f"$ref {ref!r} in the {label} schema does not resolve locally",
                    "hint": "define the target under $defs/definitions in the same document",
                    "proven": [],
                    "open": [],
                    "example": None,
                    "under": None,
                },
            )
            entry["open"] = ["backward", "forward"]
    wanted = set(mode.directions)
    out = []
    for (code, pointer), e in merged.items():
        breaks: tuple[Direction, ...] = tuple(
            d for d in ("backward", "forward") if d in e["proven"] or d in e["open"]
        )
        if wanted & set(e["proven"]):
            severity = "breaking"
        elif wanted & set(e["open"]):
            severity = "unknown"
        else:
            severity = "safe"
        out.append(
            SchemaChange(
                code=code,
                pointer=pointer,
                breaks=breaks,
                severity=severity,
                message=e["message"],
                fix_hint=e["hint"],
                counterexample=e["example"],
                counterexample_valid_under=e["under"],
                against=against,
            )
        )
    return out
