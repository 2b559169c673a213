"""Generate instances of a conjunction of subschemas, to seed counterexample search.

Output is unchecked guesswork built from the merged facts; callers validate every value.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from memkg.userschema import exact

from .expand import Case, expand, json_type
from .facts import Facts, index_nodes, int_bounds, key_nodes, merge, object_atoms
from .normalize import Node, Unconfirmable
from .regex_gen import samples

MAX_DEPTH = 3
MAX_LENGTH = 1024
"""Longest string built as a candidate: a counterexample needing more stays unconfirmed."""
MAX_COUNT = 64
"""Most items or properties put in a candidate array or object."""
MAX_VALUES = 4096
"""Most JSON values (members at every depth, the document itself included) in a candidate
built here: arrays and objects of `MAX_COUNT` members nested `MAX_DEPTH` deep would hold
millions, each costing memory and validation work the budget does not see. A counterexample
needing more stays unconfirmed."""
_ANY: tuple[Any, ...] = ({}, [], "a", 0, 0.5, True, None)
"""Instances of the empty schema, in the order `_ORDER` would produce them."""
FORMAT_SAMPLES = {
    "date": "2024-01-31",
    "time": "12:30:00Z",
    "date-time": "2024-01-31T12:30:00Z",
    "email": "cook@example.com",
    "idn-email": "cook@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "uri": "https://example.com/a",
    "regex": "^a+$",
}
_ORDER = ("object", "array", "string", "integer", "nonint", "boolean", "null")


def examples(
    nodes: list[Node], types: frozenset[str] | None = None, depth: int = 0, limit: int = 8
) -> list[Any]:
    """Instances valid under all `nodes` (optionally only of JSON `types`), best effort."""
    if all(not n.negated and (n.raw is True or n.raw == {}) for n in nodes):
        return [v for v in _ANY if types is None or json_type(v) in types][:limit]
    doc = nodes[0].doc
    key = (tuple((id(n.doc), id(n.raw), n.negated) for n in nodes), types, depth, limit)
    held = doc.examples.get(key)
    if held is not None and all(a is n.raw for a, n in zip(held[0], nodes, strict=True)):
        return list(held[1])
    doc.budget.charge()
    out: list[Any] = []
    for case in expand(nodes)[:6]:
        out.extend(case_examples(case, types, depth, limit))
        if len(out) >= limit:
            break
    doc.examples[key] = (tuple(n.raw for n in nodes), out[:limit])
    return out[:limit]


def case_examples(
    case: Case, types: frozenset[str] | None = None, depth: int = 0, limit: int = 8
) -> list[Any]:
    if depth > MAX_DEPTH:
        return []
    if not case.origins:
        return _case_examples(case, types, depth, limit)
    doc = case.origins[0].doc
    nodes = case.atoms + case.origins
    key = (tuple((id(n.doc), id(n.raw), n.negated) for n in nodes), len(case.atoms), types,
           depth, limit)  # fmt: skip
    held = doc.examples.get(key)
    if held is not None and all(a is n.raw for a, n in zip(held[0], nodes, strict=True)):
        return list(held[1])
    doc.budget.charge()
    out = _case_examples(case, types, depth, limit)
    doc.examples[key] = (tuple(n.raw for n in nodes), out)
    return list(out)


def _case_examples(case: Case, types: frozenset[str] | None, depth: int, limit: int) -> list[Any]:
    facts = merge(case)
    wanted = facts.types if types is None else facts.types & types
    raw: list[Any] = []
    if facts.finite is not None:
        raw = [v for v in facts.finite if json_type(v) in wanted]
    else:
        for name in _ORDER:
            if name in wanted:
                raw.extend(_of_type(name, case, facts, depth))
    out: list[Any] = []
    seen: set[str] = set()
    for value in raw:
        key = repr(value)
        if key in seen:
            continue
        seen.add(key)
        try:
            if case.contains(value):
                out.append(value)
        except Unconfirmable:
            continue
        if len(out) >= limit:
            break
    return out


def _of_type(name: str, case: Case, facts: Facts, depth: int) -> list[Any]:
    if name == "null":
        return [None]
    if name == "boolean":
        return [True, False]
    if name == "integer":
        return _integers(facts)
    if name == "nonint":
        return _nonints(facts)
    if name == "string":
        return _strings(facts)
    if name == "array":
        return _arrays(case, facts, depth)
    return _objects(case, facts, depth)


def _integers(facts: Facts) -> list[Any]:
    lo, hi = int_bounds(facts)
    points = [0, 1, -1, 2, 10, 100]
    points += [p for p in (lo, hi) if p is not None]
    points += [lo + 1] if lo is not None else []
    points += [hi - 1] if hi is not None else []
    for m in facts.multiples:
        start = lo if lo is not None else (hi if hi is not None else 0)
        k = math.ceil(start / m)
        points += [int(k * m), int((k + 1) * m), int(m)]
        if hi is not None:
            points.append(int(math.floor(hi / m) * m))
    return [p for p in points if (lo is None or p >= lo) and (hi is None or p <= hi)]


def _nonints(facts: Facts) -> list[Any]:
    points = [0.5, 1.5, -0.5]
    if facts.lo is not None:
        points += [facts.lo[0] + 0.5, facts.lo[0] + 0.001]
    if facts.hi is not None:
        points += [facts.hi[0] - 0.5, facts.hi[0] - 0.001]
    if facts.lo is not None and facts.hi is not None:
        points.append((facts.lo[0] + facts.hi[0]) / 2)
    for m in facts.multiples:
        half = times(m, Fraction(1, 2))
        points += [half if half % 1 else times(m, Fraction(3, 2)), times(m, 3)]
    return [p for p in map(_float, points) if not p.is_integer()]


def _float(number: float) -> float:
    """``float(number)``, infinite past the largest float (as float arithmetic would be)."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def times(step: float, k: int | Fraction) -> int | float:
    """``step`` × ``k`` as a caller writes it: computed on the decimal ``step`` stands for, so
    0.1 × 3 is 0.3 (a multiple of 0.1), not 0.30000000000000004 (which is not).

    >>> times(0.1, 3), times(0.5, 4), 0.1 * 3
    (0.3, 2, 0.30000000000000004)
    """
    try:
        value = exact(step) * k
        return int(value) if value.denominator == 1 else float(value)
    except (OverflowError, ValueError):  # past the largest float, or a step not finite
        return float(step) * float(k)


def _strings(facts: Facts) -> list[Any]:
    out: list[Any] = []
    for pat in facts.patterns:
        out.extend(samples(pat, 8, MAX_LENGTH))
    out.extend(FORMAT_SAMPLES[f] for f in sorted(facts.formats) if f in FORMAT_SAMPLES)
    if facts.min_len <= MAX_LENGTH:
        n = max(facts.min_len, 1)
        out += ["a" * facts.min_len, "x" * n, "ab" * n, ""]
        out += ["a" * max(facts.min_len - 1, 0) + c for c in "bcdefghijk"]
    out += ["sample-text", "x" * 64]
    if facts.max_len is not None and facts.max_len <= MAX_LENGTH:
        out.append("m" * facts.max_len)
    return out


def _arrays(case: Case, facts: Facts, depth: int) -> list[Any]:
    sizes = sorted({facts.min_items, facts.min_items + 1, max(facts.min_items, 2)})
    sizes = [s for s in sizes if s <= MAX_COUNT]
    out: list[Any] = []
    for size in sizes:
        if facts.max_items is not None and size > facts.max_items:
            continue
        items: list[Any] = []
        tally = Tally()
        for i in range(size):
            options = examples(index_nodes(case.atoms, i), depth=depth + 1, limit=4)
            if not options:
                break
            fresh = [o for o in options if o not in items] if facts.unique else options
            item = (fresh or options)[0]
            if not tally.admits(item):
                break
            items.append(item)
        else:
            out.append(items)
    for node, kw in object_atoms(case.atoms):
        if "contains" in kw:
            for hit in examples([node.child("contains")], depth=depth + 1, limit=2):
                out.extend([[hit], [hit] + (out[0] if out else [])])
    return out


def _objects(case: Case, facts: Facts, depth: int) -> list[Any]:
    base: dict[str, Any] = {}
    tally = Tally()
    for key in sorted(facts.required):
        options = examples(key_nodes(case.atoms, key), depth=depth + 1, limit=1)
        if not options or not tally.admits(options[0]):
            return []
        base[key] = options[0]
    out: list[Any] = [dict(base)]
    full, full_tally = dict(base), Tally(tally.held)
    for _, kw in object_atoms(case.atoms):
        props = kw.get("properties", {})
        for key in props if isinstance(props, dict) else {}:
            if key not in full and len(full) < MAX_COUNT:
                options = examples(key_nodes(case.atoms, key), depth=depth + 1, limit=1)
                if options and full_tally.admits(options[0]):
                    full[key] = options[0]
    out.append(full)
    while len(base) < min(facts.min_props, MAX_COUNT):
        key = f"extra{len(base)}"
        options = examples(key_nodes(case.atoms, key), depth=depth + 1, limit=1)
        if not options or not tally.admits(options[0]):
            break
        base[key] = options[0]
    out.append(base)
    return out


class Tally:
    """JSON values held by a candidate being built (itself and its members at every depth),
    admitted up to `MAX_VALUES`."""

    __slots__ = ("held",)

    def __init__(self, held: int = 1) -> None:
        self.held = held

    def admits(self, member: Any) -> bool:
        """Count `member` in, unless the candidate would then hold more than `MAX_VALUES`; the
        walk stops there, so it is never longer than the candidates it measures may be."""
        room = MAX_VALUES - self.held
        count, stack = 0, [member]
        while stack and count <= room:
            item = stack.pop()
            count += 1
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        if count > room:
            return False
        self.held += count
        return True
