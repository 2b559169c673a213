"""Check a schema change in a schema-registry compatibility mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .budget import DEFAULT_BUDGET, Budget, OverBudget
from .dialect import DEFAULT_DIALECT, dialect_named
from .errors import SchemaError
from .findings import Ctx
from .normalize import Document, Node, Resources, Unconfirmable
from .report import CompatibilityReport, Direction, Mode, SchemaChange
from .subset import subset
from .witness import confirm, unresolvable_refs

_RANK = {"breaking": 0, "unknown": 1, "safe": 2}


def check_schema_change(
    old: dict[str, Any] | bool | Sequence[dict[str, Any] | bool],
    new: dict[str, Any] | bool,
    mode: str = "backward",
    *,
    default_dialect: str = DEFAULT_DIALECT,
    registry: Mapping[str, Any] | None = None,
    budget: int = DEFAULT_BUDGET,
) -> CompatibilityReport:
    """Compare `new` with the earlier version(s) `old` (oldest first) under `mode`.

    backward: documents valid under old stay valid under new; forward: the reverse; full:
    both; the `-transitive` variants check against every earlier version, the others against
    the last one; none: always compatible (changes are still listed).

    A schema without `$schema` is read in `default_dialect` (`draft-04`, `draft-06`,
    `draft-07`, `2019-09`, `2020-12`). `$ref`s resolve inside the schemas given and in
    `registry` (URI -> schema); nothing is fetched, and any other reference is reported. The
    check spends at most `budget` work units and answers undecided past them.
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
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise SchemaError(f"budget must be a positive number of work units, got {budget!r}")
    if registry is not None and not isinstance(registry, Mapping):
        raise SchemaError("registry must map URIs to schemas")
    dialect = dialect_named(default_dialect)
    spent = Budget(budget)
    resources = Resources(registry or {}, dialect, spent)
    new_doc = Document(new, "new", dialect, spent, resources)
    old_docs = [
        Document(s, "old" if len(olds) == 1 else f"old[{i}]", dialect, spent, resources)
        for i, s in enumerate(olds)
    ]
    indexes = range(len(olds)) if chosen.transitive else [len(olds) - 1]
    changes: list[SchemaChange] = []
    try:
        for index in indexes:
            against = index if chosen.transitive and len(olds) > 1 else None
            changes.extend(_compare(old_docs[index], new_doc, chosen, against))
    except OverBudget as exc:
        changes = [_exhausted(str(exc), chosen)]
    changes.sort(key=lambda c: (_RANK[c.severity], c.against or 0, c.pointer, c.code))
    undecided = any(c.severity == "unknown" for c in changes)
    compatible = chosen is Mode.NONE or all(c.severity == "safe" for c in changes)
    return CompatibilityReport(
        mode=chosen,
        compatible=compatible,
        changes=tuple(changes),
        undecided=undecided,
        work=spent.spent,
    )


def _exhausted(why: str, mode: Mode) -> SchemaChange:
    return SchemaChange(
        code="undecidable.budget",
        pointer="",
        breaks=("backward", "forward"),
        severity="safe" if mode is Mode.NONE else "unknown",
        message=f"could not decide: {why} before reaching an answer",
        fix_hint="simplify the change, check smaller parts of it, or pass a larger budget",
    )


def _entry(message: str, hint: str) -> dict[str, Any]:
    return {"message": message, "hint": hint, "proven": [], "open": [], "example": None,
            "under": None}  # fmt: skip


def _compare(old: Document, new: Document, mode: Mode, against: int | None) -> list[SchemaChange]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for direction in ("backward", "forward"):
        inside, outside = (old, new) if direction == "backward" else (new, old)
        ctx = Ctx(direction)
        try:
            found = subset(ctx, [Node(inside, inside.root, "")], Node(outside, outside.root, ""))
        except Unconfirmable as exc:
            entry = merged.setdefault(
                ("undecidable.validation", ""),
                _entry(
                    f"could not decide: validation could not run ({exc})",
                    "check the schemas' references and patterns",
                ),
            )
            entry["open"].append(direction)
            continue
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
            entry = merged.setdefault((code, finding.pointer), _entry(message, finding.hint))
            (entry["proven"] if ok else entry["open"]).append(direction)
            if ok and entry["under"] is None:
                entry["example"] = example
                entry["under"] = "old" if direction == "backward" else "new"
    for label, doc in (("old", old), ("new", new)):
        for ptr, ref in unresolvable_refs(doc):
            entry = merged.setdefault(
                ("ref.unresolvable", ptr),
                _entry(
                    f"$ref {ref!r} in the {label} schema resolves neither inside the schemas"
                    " given nor in the registry passed (remote references are never fetched)",
                    "define the target under $defs/definitions in the same document, or pass"
                    " the referenced schema in the registry",
                ),
            )
            entry["open"] = ["backward", "forward"]
        for ptr, keyword, why in doc.inv.ignored:
            entry = merged.setdefault(
                ("dialect.keyword_ignored", ptr),
                _entry(
                    f"{keyword!r} in the {label} schema means nothing in {doc.draft} ({why});"
                    " validators ignore it, so the verdict may not be what its author meant",
                    "declare the intended dialect with $schema (or a default dialect), or"
                    " rewrite the keyword for this dialect",
                ),
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
