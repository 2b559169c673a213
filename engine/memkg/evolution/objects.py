"""Subset rules for object keywords."""

from __future__ import annotations

import re
from typing import Any

from .expand import Case, search
from .facts import Facts, Shape, declared_keys, key_nodes, object_atoms, shape, shape_nodes
from .findings import Ctx, Finding, in_a_not_b, rewrap
from .generate import MAX_COUNT, MAX_LENGTH, Tally, case_examples, examples
from .normalize import Node, Unconfirmable, in_dialect, view_child
from .regex_gen import samples

_OBJ = frozenset({"object"})
_ADDED = ("object.property_added", "object.property_removed")
_SPARE_KEYS = ["extra", "x_extra", "zz_new", "unknownField", "_9"]


def objects_with(case: Case, key: str, value: Any) -> list[Any]:
    """Objects of the case with `key` set to `value`."""
    out = []
    for base in [*case_examples(case, _OBJ, limit=3), {}]:
        obj = dict(base)
        obj[key] = value
        out.append(obj)
    return out


def _lift(
    ctx: Ctx,
    case: Case,
    b: Node,
    found: list[Finding],
    keys: list[str],
    code: tuple[str, str] | None,
    ptr: str,
    msg: str,
    hint: str,
) -> list[Finding]:
    """Embed child findings under each of `keys`; optionally merge them into one finding."""
    if not found:
        return []

    def wraps(v: Any) -> list[Any]:
        return [o for k in keys for o in objects_with(case, k, v)]

    lifted = rewrap(found, wraps, case, b)
    if code is None:
        return lifted
    cands = [c for f in lifted for c in f.candidates]
    unknown = next((f.unknown_code for f in lifted if f.unknown_code), None)
    return [Finding(ctx.code(*code), ptr, msg, hint, cands[:4], unknown_code=unknown)]


def compare(ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any]) -> list[Finding]:
    from .subset import check_case, conjoin, subset

    out: list[Finding] = []
    bsh = shape(b, definite=True)
    ash = [shape(n, definite=False) for n, _ in object_atoms(case.atoms)]
    a_keys = declared_keys(case.atoms)
    keys = a_keys | set(bsh.props)
    a_side = "old" if ctx.direction == "backward" else "new"
    deeper = ctx.deeper()
    for key in sorted(keys):
        a_nodes = key_nodes(case.atoms, key)
        if any(n.raw is False for n in a_nodes):
            continue
        for bn in shape_nodes(bsh, key):
            found = subset(deeper, a_nodes, bn)
            ptr = ctx.where(
                f"{case.atoms[0].ptr}/properties/{key}" if key in a_keys else None, bn.ptr
            )
            if key in a_keys and key in bsh.props:
                out.extend(_lift(ctx, case, b, found, [key], None, ptr, "", ""))
            elif key in bsh.props:
                out.extend(
                    _lift(
                        ctx,
                        case,
                        b,
                        found,
                        [key],
                        _ADDED,
                        ptr,
                        f"property '{key}' constrains values the {a_side} schema accepted freely",
                        f"loosen '{key}' or migrate existing values of '{key}'",
                    )
                )
            else:
                verb = "removed from" if ctx.direction == "backward" else "added to"
                out.extend(
                    _lift(
                        ctx,
                        case,
                        b,
                        found,
                        [key],
                        _ADDED[::-1],
                        ptr,
                        f"property '{key}' was {verb} an object that restricts other properties",
                        f"keep '{key}' declared, or upgrade readers before documents carry '{key}'"
                        if ctx.direction == "forward"
                        else f"keep '{key}' declared (optional, deprecated) "
                        "or strip it in a migration",
                    )
                )
    out.extend(_regions(ctx, case, b, ash, bsh, keys))
    out.extend(_counts(ctx, case, facts, b, kw, ash))
    req = kw.get("required", [])
    for name in [r for r in req if isinstance(r, str) and r not in facts.required]:
        cands = [
            {k: v for k, v in o.items() if k != name} for o in case_examples(case, _OBJ, limit=6)
        ]
        msg, hint = (
            (
                f"property '{name}' is now required",
                f"make '{name}' optional, or backfill it with a default in a migration",
            )
            if ctx.direction == "backward"
            else (
                f"property '{name}' is no longer required",
                f"keep writing '{name}' until readers on the old schema have upgraded",
            )
        )
        out.append(
            Finding(
                ctx.code("object.property_required", "object.property_optional"),
                ctx.where(None, f"{b.ptr}/required"),
                msg,
                hint,
                in_a_not_b(cands, case, Node(b.doc, {"required": [name]}, b.ptr)),
            )
        )
    out.extend(_dependencies(ctx, case, facts, b, kw))
    for trigger in kw.get("dependentSchemas", {}) or {}:
        if any(n.raw is False for n in key_nodes(case.atoms, trigger)):
            continue
        need = Node(b.doc, {"type": "object", "required": [trigger]}, b.ptr)
        dep = view_child(b, "dependentSchemas", trigger)
        for part in conjoin(case, need):
            out.extend(check_case(ctx, part, dep))
    if "propertyNames" in kw:
        out.extend(_names(ctx, case, b, ash, a_keys))
    return out


def _prefix(pattern: str) -> str | None:
    if not pattern.startswith("^"):
        return None
    lit = re.match(r"[A-Za-z0-9_\-:@/]*", pattern[1:])
    return lit.group(0) if lit and lit.group(0) else None


def _apart(p: str, q: str) -> bool:
    """Patterns that provably match no common key (incompatible literal prefixes)."""
    a, b = _prefix(p), _prefix(q)
    return a is not None and b is not None and not (a.startswith(b) or b.startswith(a))


def _keys_for(pattern: str | None, avoid: set[str], pats: list[str]) -> list[str]:
    pool = samples(pattern, 6, MAX_LENGTH) if pattern is not None else _SPARE_KEYS
    out = [k for k in pool if k not in avoid]
    if pattern is None:
        out = [k for k in out if not any(search(p, k) for p in pats)]
    return out[:3]


def _regions(
    ctx: Ctx, case: Case, b: Node, ash: list[Shape], bsh: Shape, keys: set[str]
) -> list[Finding]:
    """Keys outside the declared ones: per pattern, and the remaining keys."""
    from .subset import subset

    out: list[Finding] = []
    all_pats = sorted({p for s in ash for p in s.patterns} | set(bsh.patterns))
    for pat in all_pats:
        a_nodes: list[Node] = []
        for sh in ash:
            if pat in sh.patterns:
                a_nodes.append(sh.patterns[pat])
            elif sh.rest is not None and all(_apart(pat, q) for q in sh.patterns):
                a_nodes.append(sh.rest)
        if any(n.raw is False for n in a_nodes):
            continue
        b_nodes = [n for q, n in bsh.patterns.items() if q == pat or not _apart(pat, q)]
        if pat not in bsh.patterns and bsh.rest is not None:
            b_nodes.append(bsh.rest)
        names = _keys_for(pat, keys, [])
        for bn in b_nodes:
            found = subset(ctx.deeper(), a_nodes, bn)
            out.extend(
                _lift(
                    ctx,
                    case,
                    b,
                    found,
                    names,
                    ("object.pattern_properties_narrowed", "object.pattern_properties_widened"),
                    ctx.where(None, bn.ptr),
                    f"keys matching {pat!r} accept fewer values than before",
                    "keep patternProperties as they were, or migrate matching keys",
                )
            )
    if bsh.rest is None:
        return out
    a_rest = [sh.rest for sh in ash if sh.rest is not None]
    if any(n.raw is False for n in a_rest):
        return out
    found = subset(ctx.deeper(), a_rest, bsh.rest)
    closed = bsh.rest.raw is False
    codes = (
        ("object.additional_closed", "object.additional_opened")
        if closed
        else ("object.additional_narrowed", "object.additional_widened")
    )
    if ctx.direction == "backward":
        msg = "the new schema rejects additional properties the old schema allowed"
        hint = "keep additionalProperties open, or strip unknown properties in a migration"
    else:
        msg = "the new schema allows additional properties the old schema rejects"
        hint = "upgrade readers on the old schema before writers add new properties"
    names = _keys_for(None, keys, all_pats)
    out.extend(_lift(ctx, case, b, found, names, codes, ctx.where(None, bsh.rest.ptr), msg, hint))
    return out


def _counts(
    ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any], ash: list[Shape]
) -> list[Finding]:
    out: list[Finding] = []
    a_min = max(facts.min_props, len(facts.required))
    a_max = facts.max_props
    for sh in ash:
        if sh.rest is not None and sh.rest.raw is False and not sh.patterns:
            a_max = len(sh.props) if a_max is None else min(a_max, len(sh.props))
    b_min, b_max = kw.get("minProperties", 0), kw.get("maxProperties")
    pool = case_examples(case, _OBJ, limit=6)
    if isinstance(b_min, int) and b_min > a_min:
        old, new = ctx.old_new(a_min, b_min)
        codes = ("object.min_properties_raised", "object.min_properties_lowered")
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(None, f"{b.ptr}/minProperties"),
                f"minProperties changed from {old} to {new}",
                f"keep minProperties at {old}",
                in_a_not_b([*pool, {}], case, Node(b.doc, {"minProperties": b_min}, b.ptr)),
            )
        )
    if isinstance(b_max, int) and (a_max is None or a_max > b_max):
        big = []
        for base in pool if b_max < MAX_COUNT else []:
            obj, tally = dict(base), Tally(0)
            for i in range(b_max + 1 if tally.admits(obj) else 0):
                for value in examples(key_nodes(case.atoms, f"k{i}"), limit=1):
                    if f"k{i}" not in obj and tally.admits(value):
                        obj[f"k{i}"] = value
            big += [obj, base]
        codes = ("object.max_properties_lowered", "object.max_properties_raised")
        if facts.max_props is None:
            codes = ("object.max_properties_added", "object.max_properties_removed")
        old, new = ctx.old_new("unbounded" if a_max is None else a_max, b_max)
        out.append(
            Finding(
                ctx.code(*codes),
                ctx.where(None, f"{b.ptr}/maxProperties"),
                f"maxProperties changed from {old} to {new}",
                f"keep maxProperties at {old}",
                in_a_not_b(big, case, Node(b.doc, {"maxProperties": b_max}, b.ptr)),
            )
        )
    return out


def _dependencies(ctx: Ctx, case: Case, facts: Facts, b: Node, kw: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    for trigger, deps in (kw.get("dependentRequired", {}) or {}).items():
        if any(n.raw is False for n in key_nodes(case.atoms, trigger)):
            continue
        have = set(facts.required)
        for _, akw in object_atoms(case.atoms):
            have.update((akw.get("dependentRequired", {}) or {}).get(trigger, []))
        for dep in [d for d in deps if d not in have]:
            values = examples(key_nodes(case.atoms, trigger), limit=2)
            cands = [
                {**{k: v for k, v in o.items() if k != dep}, trigger: value}
                for o in case_examples(case, _OBJ, limit=4)
                for value in values
            ]
            msg, hint = (
                (
                    f"'{trigger}' now requires '{dep}'",
                    f"drop the dependency or backfill '{dep}' where '{trigger}' is set",
                )
                if ctx.direction == "backward"
                else (
                    f"'{trigger}' no longer requires '{dep}'",
                    f"keep writing '{dep}' alongside '{trigger}' until readers upgrade",
                )
            )
            out.append(
                Finding(
                    ctx.code("object.dependency_added", "object.dependency_removed"),
                    ctx.where(None, f"{b.ptr}/dependentRequired/{trigger}"),
                    msg,
                    hint,
                    in_a_not_b(
                        cands,
                        case,
                        Node(
                            b.doc, in_dialect(b.doc, {"dependentRequired": {trigger: [dep]}}), b.ptr
                        ),
                    ),
                )
            )
    return out


def _accepts(node: Node, key: str) -> bool | None:
    """Whether `node` accepts `key` as a value; None when validation cannot run."""
    try:
        return node.is_valid(key)
    except Unconfirmable:
        return None


def _names(ctx: Ctx, case: Case, b: Node, ash: list[Shape], a_keys: set[str]) -> list[Finding]:
    from .subset import subset

    pn = b.child("propertyNames")
    mine = [
        view_child(n, "propertyNames")
        for n, kw in object_atoms(case.atoms)
        if "propertyNames" in kw
    ]
    closed = any(sh.rest is not None and sh.rest.raw is False and not sh.patterns for sh in ash)
    if closed and all(_accepts(pn, k) for k in a_keys):
        return []
    if mine and not subset(ctx.deeper(), mine, pn):
        return []
    names = sorted(a_keys) + _SPARE_KEYS + ["UPPER", "with space", "a" * 70]
    cands = [
        o
        for k in names
        if _accepts(pn, k) is False
        for v in examples(key_nodes(case.atoms, k), limit=1)
        for o in objects_with(case, k, v)
    ]
    return [
        Finding(
            ctx.code("object.property_names_narrowed", "object.property_names_widened"),
            ctx.where(None, pn.ptr),
            "propertyNames rejects keys that were accepted",
            "keep propertyNames as it was, or rename the affected keys in a migration",
            in_a_not_b(cands, case, Node(b.doc, {"propertyNames": pn.raw}, b.ptr)),
            unknown_code="undecidable.property_names",
        )
    ]
