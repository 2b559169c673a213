"""Merge the plain keywords of a case's atoms into one set of facts about its instances."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .expand import JSON_TYPES, Case, declared_types, json_type, search
from .normalize import Node, Unconfirmable, canonical, view, view_child

Bound = tuple[float, bool]
"""A numeric bound: (value, exclusive)."""


@dataclass
class Facts:
    types: frozenset[str] = frozenset(JSON_TYPES)
    finite: list[Any] | None = None
    lo: Bound | None = None
    hi: Bound | None = None
    multiples: list[float] = field(default_factory=list)
    min_len: int = 0
    max_len: int | None = None
    patterns: list[str] = field(default_factory=list)
    formats: set[str] = field(default_factory=set)
    required: set[str] = field(default_factory=set)
    min_props: int = 0
    max_props: int | None = None
    min_items: int = 0
    max_items: int | None = None
    unique: bool = False


def _tighter(old: Bound | None, new: Bound, lower: bool) -> Bound:
    if old is None:
        return new
    if old[0] == new[0]:
        return (old[0], old[1] or new[1])
    return max(old, new) if lower else min(old, new)


def int_bounds(facts: Facts) -> tuple[int | None, int | None]:
    """Inclusive integer bounds implied by the numeric bounds."""
    lo = hi = None
    if facts.lo is not None:
        value, excl = facts.lo
        lo = math.floor(value) + 1 if excl else math.ceil(value)
    if facts.hi is not None:
        value, excl = facts.hi
        hi = math.ceil(value) - 1 if excl else math.floor(value)
    return lo, hi


def merge(case: Case) -> Facts:
    """Facts holding for every instance of `case`."""
    f = Facts()
    finite: list[Any] | None = None
    for node in case.atoms:
        kw = view(node)
        if "type" in kw:
            f.types = f.types & declared_types(kw["type"])
        values = [kw["const"]] if "const" in kw else None
        if isinstance(kw.get("enum"), list):
            keys = {canonical(v) for v in kw["enum"]}
            values = [v for v in (values or kw["enum"]) if canonical(v) in keys]
        if values is not None:
            keys = {canonical(v) for v in values}
            finite = values if finite is None else [v for v in finite if canonical(v) in keys]
        for key, lower, excl in (
            ("minimum", True, False),
            ("exclusiveMinimum", True, True),
            ("maximum", False, False),
            ("exclusiveMaximum", False, True),
        ):
            value = kw.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if lower:
                    f.lo = _tighter(f.lo, (value, excl), True)
                else:
                    f.hi = _tighter(f.hi, (value, excl), False)
        if isinstance(kw.get("multipleOf"), (int, float)):
            f.multiples.append(kw["multipleOf"])
        f.min_len = max(f.min_len, int(kw.get("minLength", 0)))
        f.max_len = _min(f.max_len, kw.get("maxLength"))
        if isinstance(kw.get("pattern"), str):
            f.patterns.append(kw["pattern"])
        if isinstance(kw.get("format"), str) and kw["format"] in node.doc.formats:
            f.formats.add(kw["format"])
        if isinstance(kw.get("required"), list):
            f.required.update(r for r in kw["required"] if isinstance(r, str))
        f.min_props = max(f.min_props, int(kw.get("minProperties", 0)))
        f.max_props = _min(f.max_props, kw.get("maxProperties"))
        f.min_items = max(f.min_items, int(kw.get("minItems", 0)))
        f.max_items = _min(f.max_items, kw.get("maxItems"))
        f.unique = f.unique or kw.get("uniqueItems") is True
        if kw.get("items") is False:
            f.max_items = _min(f.max_items, len(kw.get("prefixItems", [])))
    for node in case.origins:
        if node.negated:
            f.types = f.types - _type_only(node)
    if finite is None and f.types and f.types <= {"boolean", "null"}:
        finite = [v for v in (True, False, None) if json_type(v) in f.types]
    if finite is None and f.types == {"integer"}:
        lo, hi = int_bounds(f)
        if lo is not None and hi is not None and hi - lo < 64:
            # 1.0 too: an integer for 2020-12, not for draft-04
            finite = [*range(lo, hi + 1), *(float(v) for v in range(lo, hi + 1))]
    if finite is not None:
        f.finite = [v for v in finite if _contains(case, v)]
        f.types = frozenset(json_type(v) for v in f.finite)
    return f


_NOTES = frozenset({"title", "description", "$comment", "default", "examples", "deprecated",
                    "readOnly", "writeOnly", "$id", "$anchor", "$schema"})  # fmt: skip


def _type_only(node: Node) -> frozenset[str]:
    """The JSON types a schema accepts when `type` is all it says (else nothing)."""
    kw = view(node)
    if "type" not in kw or any(k != "type" and k not in _NOTES for k in kw):
        return frozenset()
    types = declared_types(kw["type"])
    if node.doc.draft == "draft-04" and "nonint" not in types:
        return types - {"integer"}  # its `integer` leaves out 1.0, which stays possible
    return types


def _min(current: int | None, value: Any) -> int | None:
    if not isinstance(value, int):
        return current
    return value if current is None else min(current, value)


def _contains(case: Case, value: Any) -> bool:
    try:
        return case.contains(value)
    except Unconfirmable:
        return True


def object_atoms(atoms: list[Node]) -> list[tuple[Node, dict[str, Any]]]:
    return [(n, kw) for n in atoms if isinstance(n.raw, dict) and (kw := view(n))]


@dataclass
class Shape:
    """Object keywords of one node: declared properties, patterns, and the rest-of-keys schema."""

    props: dict[str, Node]
    patterns: dict[str, Node]
    rest: Node | None
    exempt: set[str]
    exempt_patterns: set[str]


_IN_PLACE = ("allOf", "anyOf", "oneOf", "if", "then", "else", "dependentSchemas")


def _evaluated(node: Node, definite: bool) -> tuple[set[str], set[str], bool]:
    """Property names/patterns that in-place subschemas of `node` evaluate (all: third item)."""
    names: set[str] = set()
    pats: set[str] = set()
    stack, seen = [node], 0
    while stack and seen < 64:
        cur = stack.pop()
        seen += 1
        kw = view(cur) if isinstance(cur.raw, dict) else {}
        if "additionalProperties" in kw or (cur is not node and "unevaluatedProperties" in kw):
            return names, pats, True
        if not definite and ("$dynamicRef" in kw or "$recursiveRef" in kw):
            return names, pats, True  # may evaluate anything
        names.update(kw.get("properties", {}) or {})
        pats.update(kw.get("patternProperties", {}) or {})
        if isinstance(kw.get("$ref"), str) and (target := cur.doc.resolve(kw["$ref"], cur.ptr)):
            stack.append(target)
        for key in ("allOf",) if definite else _IN_PLACE:
            value = kw.get(key)
            if isinstance(value, list):
                stack.extend(cur.child(key, i) for i in range(len(value)))
            elif isinstance(value, dict) and key == "dependentSchemas":
                stack.extend(view_child(cur, key, k) for k in value)
            elif value is not None and key != "dependentSchemas":
                stack.append(cur.child(key))
    return names, pats, False


def shape(node: Node, definite: bool) -> Shape:
    """Object shape of `node`; `definite` counts only surely evaluated keys as exempt from
    `unevaluatedProperties` (use it for the schema that must contain the other)."""
    key = (id(node.raw), node.ptr, definite)
    held = node.doc.shapes.get(key)
    if held is None or held[0] is not node.raw:
        held = (node.raw, _shape(node, definite))
        node.doc.shapes[key] = held
    return held[1]


def _shape(node: Node, definite: bool) -> Shape:
    kw = view(node) if isinstance(node.raw, dict) else {}
    props = {k: node.child("properties", k) for k in kw.get("properties", {}) or {}}
    pats = {p: node.child("patternProperties", p) for p in kw.get("patternProperties", {}) or {}}
    if "additionalProperties" in kw:
        return Shape(props, pats, node.child("additionalProperties"), set(), set())
    if "unevaluatedProperties" in kw:
        names, epats, everything = _evaluated(node, definite)
        if not everything:
            return Shape(props, pats, node.child("unevaluatedProperties"), names, epats)
    return Shape(props, pats, None, set(), set())


def shape_nodes(sh: Shape, key: str) -> list[Node]:
    if key in sh.props:
        return [sh.props[key]]
    out = [n for p, n in sh.patterns.items() if search(p, key)]
    if out or sh.rest is None or key in sh.exempt:
        return out
    if any(search(p, key) for p in sh.exempt_patterns):
        return out
    return [sh.rest]


_ATOMS_PER_UNIT = 16
"""A lookup over a conjunction's atoms is one step only while they are few: past this many, it
is charged a work unit per this many, so a conjunction of hundreds of object schemas looked up
key by key runs out of budget instead of running for minutes."""


def _charge_atoms(atoms: list[Node]) -> None:
    if len(atoms) >= _ATOMS_PER_UNIT:
        atoms[0].doc.budget.charge(len(atoms) // _ATOMS_PER_UNIT)


def key_nodes(atoms: list[Node], key: str, definite: bool = False) -> list[Node]:
    """Subschemas every value under `key` must satisfy."""
    _charge_atoms(atoms)
    out: list[Node] = []
    for node, _ in object_atoms(atoms):
        out.extend(shape_nodes(shape(node, definite), key))
    return out


def index_nodes(atoms: list[Node], index: int, definite: bool = False) -> list[Node]:
    """Subschemas every array element at `index` must satisfy.

    `unevaluatedItems` applies past the items that in-place subschemas evaluate: `definite`
    counts only those surely evaluated (use it for the schema that must contain the other),
    otherwise every item some branch might evaluate is exempt.
    """
    _charge_atoms(atoms)
    out: list[Node] = []
    for node, kw in object_atoms(atoms):
        prefix = kw.get("prefixItems", [])
        if isinstance(prefix, list) and index < len(prefix):
            out.append(view_child(node, "prefixItems", index))
        elif "items" in kw:
            out.append(view_child(node, "items"))
        elif "unevaluatedItems" in kw:
            count, everything = evaluated_items(node, definite)
            if not everything and index >= count:
                out.append(node.child("unevaluatedItems"))
    return out


def evaluated_items(node: Node, definite: bool) -> tuple[int, bool]:
    """How many leading items in-place subschemas of `node` evaluate (all: second item)."""
    count = 0
    stack, seen = [node], 0
    while stack and seen < 64:
        cur = stack.pop()
        seen += 1
        kw = view(cur) if isinstance(cur.raw, dict) else {}
        if "items" in kw or (cur is not node and "unevaluatedItems" in kw):
            return count, True
        if not definite and ("contains" in kw or "$dynamicRef" in kw or "$recursiveRef" in kw):
            return count, True
        prefix = kw.get("prefixItems")
        if isinstance(prefix, list):
            count = max(count, len(prefix))
        if isinstance(kw.get("$ref"), str) and (target := cur.doc.resolve(kw["$ref"], cur.ptr)):
            stack.append(target)
        for key in ("allOf",) if definite else _IN_PLACE:
            value = kw.get(key)
            if isinstance(value, list):
                stack.extend(cur.child(key, i) for i in range(len(value)))
            elif isinstance(value, dict) and key == "dependentSchemas":
                stack.extend(view_child(cur, key, k) for k in value)
            elif value is not None and key != "dependentSchemas":
                stack.append(cur.child(key))
    return count, False


def declared_keys(atoms: list[Node]) -> set[str]:
    keys: set[str] = set()
    for _, kw in object_atoms(atoms):
        props = kw.get("properties", {})
        if isinstance(props, dict):
            keys.update(props)
    return keys


def prefix_len(atoms: list[Node]) -> int:
    """Positions past which every item meets the same subschemas."""
    out = 0
    for node, kw in object_atoms(atoms):
        out = max(out, len(kw.get("prefixItems", []) or []))
        if "unevaluatedItems" in kw and "items" not in kw:
            out = max(out, evaluated_items(node, False)[0])
    return out


def own_facts(node: Node) -> Facts:
    """Facts from a node's own keywords, ignoring its subschemas."""
    return merge(Case([node], []))


def keyword_ptr(atoms: list[Node], key: str) -> str | None:
    """Pointer to `key` in the first atom that has it."""
    for node in atoms:
        if isinstance(node.raw, dict) and key in view(node):
            return f"{node.ptr}/{key}"
    return None
