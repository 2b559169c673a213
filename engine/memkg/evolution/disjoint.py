"""Prove that two schemas share no instance (used for oneOf, not and if/then/else)."""

from __future__ import annotations

from .expand import Case, expand
from .facts import Facts, int_bounds, key_nodes, merge
from .normalize import Node

MAX_DEPTH = 3


def disjoint(case: Case, other: Node, depth: int = 0) -> bool:
    """True only if no instance is in both `case` and `other`."""
    if other.negated:
        return any(o.same_as(Node(other.doc, other.raw, other.ptr)) for o in case.origins)
    return all(
        empty(Case(case.atoms + c.atoms, case.origins + c.origins), depth) for c in expand([other])
    )


def empty(case: Case, depth: int = 0) -> bool:
    """True only if `case` has no instance."""
    for node in case.origins:
        if node.negated and any(not o.negated and o.same_as(_flip(node)) for o in case.origins):
            return True
    facts = merge(case)
    if facts.finite is not None:
        return not facts.finite
    return all(_type_empty(t, facts, case, depth) for t in facts.types)


def _flip(node: Node) -> Node:
    return Node(node.doc, node.raw, node.ptr, not node.negated)


def _type_empty(name: str, facts: Facts, case: Case, depth: int) -> bool:
    if name == "integer":
        lo, hi = int_bounds(facts)
        return lo is not None and hi is not None and lo > hi
    if name == "nonint":
        if facts.lo is None or facts.hi is None:
            return False
        if facts.lo[0] == facts.hi[0]:
            return facts.lo[1] or facts.hi[1] or float(facts.lo[0]).is_integer()
        return facts.lo[0] > facts.hi[0]
    if name == "string":
        return facts.max_len is not None and facts.min_len > facts.max_len
    if name == "array":
        return facts.max_items is not None and facts.min_items > facts.max_items
    if name == "object":
        if facts.max_props is not None and facts.min_props > facts.max_props:
            return True
        if depth >= MAX_DEPTH:
            return False
        for key in sorted(facts.required):
            nodes = key_nodes(case.atoms, key)
            if any(n.raw is False for n in nodes):
                return True
            if nodes and all(empty(c, depth + 1) for c in expand(nodes)):
                return True
    return False
