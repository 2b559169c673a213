"""Subset rules for array keywords."""

from __future__ import annotations

from typing import Any

from .expand import Case
from .facts import Facts, index_nodes, object_atoms, prefix_len
from .findings import Ctx, Finding, in_a_not_b, rewrap
from .generate import MAX_COUNT, Tally, case_examples, examples
from .normalize import Node, view_child

_ARR = frozenset({"array"})


def arrays_with(case: Case, index: int, value: Any) -> list[Any]:
    """Arrays of the case with `value` at `index` (padding earlier slots with examples)."""
    out = []
    for base in [*case_examples(case, _ARR, limit=3), []]:
        arr = list(base[:index])
        for j in range(len(arr), index):
            fill = examples(index_nodes(case.atoms, j), limit=1)
            if not fill:
                break
            arr.append(fill[0])
        arr.append(value)
        out.append(arr + list(base[index + 1 :]))
        out.append(arr)
    return out


def _closed(ctx: Ctx, found: list[Finding], ptr: str) -> list[Finding]:
    if not found:
        return []
    cands = [c for f in found for c in f.candidates]
    msg = (
        "the new schema rejects array items beyond position the old schema allowed"
        if ctx.direction == "backward"
        else "the new schema allows array items the old schema rejects"
    )
    return [
        Finding(
            ctx.code("array.additional_items_closed", "array.additional_items_opened"),
            ptr,
            msg,
            "keep accepting the extra items, or migrate the arrays",
            cands[:4],
        )
    ]


def compare(ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any]) -> list[Finding]:
    from .subset import subset

    out: list[Finding] = []
    a_max = facts.max_items
    fixed = max(prefix_len(case.atoms), prefix_len([b]))
    for i in range(fixed + 1):
        if a_max is not None and i >= a_max:
            break
        a_nodes = index_nodes(case.atoms, i)
        if any(n.raw is False for n in a_nodes):
            break
        for bn in index_nodes([b], i, definite=True):
            found = rewrap(
                subset(ctx.deeper(), a_nodes, bn), lambda v, i=i: arrays_with(case, i, v), case, b
            )
            out.extend(_closed(ctx, found, ctx.where(None, bn.ptr)) if bn.raw is False else found)
    out.extend(_counts(ctx, case, facts, b, kw))
    if "contains" in kw:
        out.extend(_contains(ctx, case, facts, b, kw))
    return out


def _grow(case: Case, base: list[Any], size: int, unique: bool) -> list[Any]:
    arr = list(base)
    tally = Tally(0)
    if not tally.admits(arr):
        return arr
    while len(arr) < min(size, MAX_COUNT + 1):
        options = examples(index_nodes(case.atoms, len(arr)), limit=size + 2)
        fresh = [o for o in options if o not in arr] if unique else options
        if not fresh or not tally.admits(fresh[0]):
            break
        arr.append(fresh[0])
    return arr


def _counts(ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    pool = case_examples(case, _ARR, limit=6)
    b_min, b_max = kw.get("minItems", 0), kw.get("maxItems")
    if isinstance(b_min, int) and b_min > facts.min_items:
        # a prefix past a pool array's end is the whole array: stop there, not at b_min,
        # which may be any count up to a double's range
        short = [p[:n] for p in pool for n in range(facts.min_items, min(b_min, len(p) + 1))]
        short.append([])
        old, new = ctx.old_new(facts.min_items, b_min)
        out.append(
            Finding(
                ctx.code("array.min_items_raised", "array.min_items_lowered"),
                ctx.where(None, f"{b.ptr}/minItems"),
                f"minItems changed from {old} to {new}",
                f"keep minItems at {old}",
                in_a_not_b(short, case, Node(b.doc, {"minItems": b_min}, b.ptr)),
            )
        )
    if isinstance(b_max, int) and (facts.max_items is None or facts.max_items > b_max):
        long = [_grow(case, p, b_max + 1, facts.unique) for p in [*pool, []]]
        codes = (
            ("array.max_items_lowered", "array.max_items_raised")
            if facts.max_items is not None
            else ("array.max_items_added", "array.max_items_removed")
        )
        old, new = ctx.old_new("unbounded" if facts.max_items is None else facts.max_items, b_max)
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(None, f"{b.ptr}/maxItems"),
                f"maxItems changed from {old} to {new}",
                f"keep maxItems at {old} or split longer arrays in a migration",
                in_a_not_b(long, case, Node(b.doc, {"maxItems": b_max}, b.ptr)),
            )
        )
    if (
        kw.get("uniqueItems") is True
        and not facts.unique
        and (facts.max_items is None or facts.max_items > 1)
    ):
        dupes = [[*p, p[-1]] for p in pool if p] + [
            [v, v] for v in examples(index_nodes(case.atoms, 0), limit=3)
        ]
        dupes += [_grow(case, [], 1, False) * 2]
        out.append(
            Finding(
                ctx.code("array.unique_items_added", "array.unique_items_removed"),
                ctx.where(None, f"{b.ptr}/uniqueItems"),
                "uniqueItems now rejects arrays with duplicates"
                if ctx.direction == "backward"
                else "duplicates are now allowed",
                "deduplicate arrays in a migration, or keep uniqueItems as it was",
                in_a_not_b(dupes, case, Node(b.doc, {"uniqueItems": True}, b.ptr)),
            )
        )
    return out


def _contains(ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any]) -> list[Finding]:
    from .subset import subset

    modern = b.doc.dialect.modern
    b_min = kw.get("minContains", 1) if modern else 1
    b_max = kw.get("maxContains") if modern else None
    target = b.child("contains")
    ok_min = b_min == 0
    for node, akw in object_atoms(case.atoms):
        if "contains" in akw and not ok_min:
            a_min = akw.get("minContains", 1) if node.doc.dialect.modern else 1
            ok_min = a_min >= b_min and not subset(ctx.deeper(), [node.child("contains")], target)
    if not ok_min and facts.min_items >= b_min:
        every = index_nodes(case.atoms, prefix_len(case.atoms))
        ok_min = (
            bool(every)
            and not subset(ctx.deeper(), every, target)
            and all(
                not subset(ctx.deeper(), index_nodes(case.atoms, i), target)
                for i in range(prefix_len(case.atoms))
            )
        )
    ok_max = b_max is None or (facts.max_items is not None and facts.max_items <= b_max)
    if ok_min and ok_max:
        return []
    had = any("contains" in akw for _, akw in object_atoms(case.atoms))
    codes = (
        ("array.contains_changed", "array.contains_changed")
        if had
        else ("array.contains_added", "array.contains_removed")
    )
    pool = [*case_examples(case, _ARR, limit=8), []]
    pool += [_grow(case, [], (b_max or 0) + 1, False)]
    keys = {k: b.raw[k] for k in ("contains", "minContains", "maxContains") if k in b.raw}
    return [
        Finding(
            ctx.code(*codes),
            ctx.where(None, view_child(b, "contains").ptr),
            "contains rejects arrays that were accepted",
            "relax `contains`, or migrate arrays lacking a matching item",
            in_a_not_b(pool, case, Node(b.doc, keys, b.ptr)),
            unknown_code="undecidable.contains",
        )
    ]
