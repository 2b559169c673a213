"""Expand a conjunction of subschemas into disjunction-free cases and merge their keywords.

A case over-approximates part of the conjunction: keywords the checker cannot use (`not`,
inactive `dependentSchemas`, disjunctions past the case limit, unresolvable `$ref`) are
dropped, which only enlarges the set of accepted instances. `origins` keeps every node the
case came from, so validating against all of them tests exact membership.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memkg import userschema

from .normalize import Node, view, view_child

MAX_CASES = 64
MAX_UNFOLD = 16
JSON_TYPES = ("object", "array", "string", "integer", "nonint", "boolean", "null")


def json_type(value: Any) -> str:
    """Type of a JSON value, with numbers split into `integer` and `nonint`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "nonint"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def declared_types(keyword: Any) -> frozenset[str]:
    names = [keyword] if isinstance(keyword, str) else list(keyword)
    out: set[str] = set()
    for name in names:
        if name == "number":
            out |= {"integer", "nonint"}
        elif name in JSON_TYPES:
            out.add(name)
    return frozenset(out)


@dataclass
class Case:
    atoms: list[Node] = field(default_factory=list)
    origins: list[Node] = field(default_factory=list)

    def contains(self, instance: Any) -> bool:
        return all(node.is_valid(instance) for node in self.origins)

    def views(self) -> list[tuple[Node, dict[str, Any]]]:
        return [(n, view(n)) for n in self.atoms]


Item = Node | list[list[Node]]


def _items(node: Node, kw: dict[str, Any], origins: list[Node], follow: bool) -> list[Item]:
    """Sub-nodes to conjoin and disjunctions to split, contributed by one node."""
    out: list[Item] = []
    for key in ("$ref", "$dynamicRef", "$recursiveRef"):
        if not follow or not isinstance(kw.get(key), str):
            continue
        if key != "$ref" and (node.doc.inv.ids or node.doc.resources.schemas):
            continue  # the dynamic scope decides: leaving it out only widens the case
        target = node.doc.resolve(kw[key], node.ptr)
        if target is not None:
            out.append(target)
    out.extend(node.child("allOf", i) for i in range(len(kw.get("allOf", []))))
    for key in ("anyOf", "oneOf"):
        if key in kw:
            out.append([[node.child(key, i)] for i in range(len(kw[key]))])
    if "if" in kw:
        cond = node.child("if")
        then = [node.child("then")] if "then" in kw else []
        other = [node.child("else")] if "else" in kw else []
        if any(o.same_as(cond) for o in origins):
            out.extend(then)
        elif any(o.same_as(negate(cond)) for o in origins):
            out.extend(other)
        else:
            out.append([[cond, *then], [negate(cond), *other]])
    return out


def expand(nodes: list[Node]) -> list[Case]:
    """Disjunction-free cases whose union contains (and may exceed) the conjunction of `nodes`."""
    done: list[Case] = []
    Work = tuple[list[Item], list[Node], list[Node], int, frozenset[tuple[int, str]]]
    stack: list[Work] = [(list(nodes), [], list(nodes), 0, frozenset())]
    budget = nodes[0].doc.budget if nodes else None
    while stack:
        if budget is not None:
            budget.charge()
        queue, atoms, origins, unfolded, active = stack.pop()
        forked = False
        while queue:
            item = queue.pop(0)
            if isinstance(item, list):
                if len(done) + len(stack) + len(item) > MAX_CASES:
                    continue
                for alt in reversed(item):
                    stack.append((queue + list(alt), list(atoms), origins + alt, unfolded, active))
                forked = True
                break
            if item.negated or item.raw is True:
                continue
            if item.raw is False:
                forked = True
                break
            kw = view(item)
            atoms.append(item)
            if "not" in kw:
                origins.append(negate(item.child("not")))
            if "$ref" in kw or "$dynamicRef" in kw or "$recursiveRef" in kw:
                unfolded += 1
            queue.extend(_items(item, kw, origins, unfolded <= MAX_UNFOLD))
            if not queue:
                extra, active = _activate(atoms, active)
                queue.extend(extra)
                origins.extend(extra)
        if not forked:
            done.append(Case(atoms, origins))
    return done


def negate(node: Node) -> Node:
    return Node(node.doc, node.raw, node.ptr, not node.negated)


def _activate(
    atoms: list[Node], active: frozenset[tuple[int, str]]
) -> tuple[list[Node], frozenset[tuple[int, str]]]:
    """`dependentSchemas` entries whose trigger property is required in this case."""
    if not object_only(atoms):
        return [], active
    required = required_of(atoms)
    extra: list[Node] = []
    out = set(active)
    for node in atoms:
        deps = view(node).get("dependentSchemas")
        if not isinstance(deps, dict):
            continue
        for key in deps:
            if key in required and (id(node.raw), key) not in out:
                out.add((id(node.raw), key))
                extra.append(view_child(node, "dependentSchemas", key))
    return extra, frozenset(out)


def dependents(atoms: list[Node]) -> list[Node]:
    """The `dependentSchemas` of `atoms` whose trigger property they require."""
    return _activate(atoms, frozenset())[0]


def required_of(atoms: list[Node]) -> set[str]:
    out: set[str] = set()
    for node in atoms:
        req = view(node).get("required")
        if isinstance(req, list):
            out.update(r for r in req if isinstance(r, str))
    return out


def object_only(atoms: list[Node]) -> bool:
    """Some atom restricts the instance to objects."""
    return any(
        "type" in (kw := view(n)) and declared_types(kw["type"]) == {"object"} for n in atoms
    )


def search(pattern: str, text: str) -> bool | None:
    """`re.search` under the time limit of user patterns, or None when Python cannot compile
    the pattern or the match runs out of time."""
    try:
        return userschema.search(pattern, text)
    except (re.error, userschema.PatternTimeout):
        return None
