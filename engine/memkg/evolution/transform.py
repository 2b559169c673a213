"""The migration mapping language: what a new value is made of, evaluated without code.

An expression is a mapping with exactly one operator; paths are JSON pointers into the old
value (``""`` is the whole value, ``/level`` a field; a merge reads ``/<old key>``):

* ``copy: PATH``: the old value there; a missing path is no evidence (unmappable);
* ``const: VALUE``: a fixed value that the plan states as known (a new default policy);
* ``unknown: VALUE``: the new schema's explicit unknown, counted as such;
* ``map: {from: PATH, values: {OLD: NEW}, else: keep|drop|unmappable}``: enum values, item
  by item for a list; ``NEW: null`` removes the item (a list) or leaves no value (a scalar);
  a number or boolean is matched by its spelling (``{1: low}``, ``{true: yes}``), as YAML
  mapping keys are text;
* ``object: {FIELD: EXPR}``: an object built field by field;
* ``cases: [{when: COND, then: EXPR}], otherwise: EXPR``: the first case whose condition
  holds; with no ``otherwise`` and no case holding, the old value carries no evidence and the
  fact is unmappable, never guessed;
* ``ask: QUESTION``: no value; the question goes to the user instead.

A condition is ``{path: PATH, OP: OPERAND}`` with one of ``equals``, ``in``, ``contains``,
``contains_any``, ``contains_all``, ``exists``.

>>> evaluate({"map": {"from": "", "values": {"no_organ_meat": None}}}, ["halal", "no_organ_meat"])
Value(value=['halal'], unknown=False)
>>> evaluate({"cases": [{"when": {"contains": "vegan"}, "then": {"const": "never"}}]}, ["halal"])
Unmappable(reason='no case matched and the plan gives no `otherwise`')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPERATORS = ("copy", "const", "unknown", "map", "object", "cases", "ask")
CONDITIONS = ("equals", "in", "contains", "contains_any", "contains_all", "exists")
_MISSING = object()


@dataclass(frozen=True)
class Value:
    value: Any
    unknown: bool = False
    """The value is (or holds) the explicit unknown: the old data carried no evidence."""


@dataclass(frozen=True)
class Unmappable:
    reason: str


@dataclass(frozen=True)
class Ask:
    question: str


Result = Value | Unmappable | Ask


def pointer(value: Any, path: str) -> Any:
    """The part of ``value`` at JSON pointer ``path``, or ``_MISSING``."""
    if path in ("", "/"):
        return value
    for raw in path.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def evaluate(expr: Mapping[str, Any], old: Any) -> Result:
    """The new value ``expr`` makes of ``old``."""
    if "cases" in expr:
        for case in expr["cases"]:
            if holds(case["when"], old):
                return evaluate(case["then"], old)
        if "otherwise" in expr:
            return evaluate(expr["otherwise"], old)
        return Unmappable("no case matched and the plan gives no `otherwise`")
    [(op, arg)] = expr.items()
    if op == "copy":
        found = pointer(old, arg)
        return (
            Unmappable(f"the old value has nothing at {arg!r}")
            if found is _MISSING
            else Value(found)
        )
    if op == "const":
        return Value(arg)
    if op == "unknown":
        return Value(arg, unknown=True)
    if op == "ask":
        return Ask(str(arg))
    if op == "object":
        built: dict[str, Any] = {}
        unknown = False
        for name, sub in arg.items():
            result = evaluate(sub, old)
            if not isinstance(result, Value):
                return result
            built[name], unknown = result.value, unknown or result.unknown
        return Value(built, unknown)
    return _map(arg, old)


def _map(arg: Mapping[str, Any], old: Any) -> Result:
    found = pointer(old, arg.get("from", ""))
    if found is _MISSING:
        return Unmappable(f"the old value has nothing at {arg.get('from', '')!r}")
    values, otherwise = arg["values"], arg.get("else", "keep")

    def _spelled(item: Any) -> str | None:
        """The ``values`` key naming ``item``: YAML reads mapping keys as text, so a number or
        boolean is named by how it is spelled (``1``, ``2.5``, ``true``, YAML's ``True``)."""
        if isinstance(item, str):
            return item if item in values else None
        if item is None or isinstance(item, (bool, int, float)):
            return next((k for k in (json.dumps(item), str(item)) if k in values), None)
        return None

    def one(item: Any) -> Any:
        spelled = _spelled(item)
        if spelled is not None:
            return values[spelled]
        if otherwise == "keep":
            return item
        if otherwise == "drop":
            return None
        return _MISSING

    if isinstance(found, list):
        out: list[Any] = []
        for item in found:
            mapped = one(item)
            if mapped is _MISSING:
                return Unmappable(f"the plan maps no value for {item!r}")
            if mapped is not None and mapped not in out:
                out.append(mapped)
        return Value(out)
    mapped = one(found)
    if mapped is _MISSING:
        return Unmappable(f"the plan maps no value for {found!r}")
    if mapped is None:
        return Unmappable(f"the plan maps {found!r} to no value")
    return Value(mapped)


def holds(cond: Mapping[str, Any], old: Any) -> bool:
    found = pointer(old, cond.get("path", ""))
    [(op, operand)] = [(k, v) for k, v in cond.items() if k != "path"]
    if op == "exists":
        return (found is not _MISSING) == bool(operand)
    if found is _MISSING:
        return False
    if op == "equals":
        return bool(found == operand)
    if op == "in":
        return found in operand
    items = found if isinstance(found, list) else []
    if op == "contains":
        return operand in items
    if op == "contains_any":
        return any(v in items for v in operand)
    return all(v in items for v in operand)


def expr_problems(
    expr: Any, where: tuple[str | int, ...] = ()
) -> list[tuple[tuple[str | int, ...], str]]:
    """(path in the plan, message) for every malformed part of ``expr``."""
    if isinstance(expr, Mapping) and "cases" in expr:
        return _cases_problems(expr, where)
    if not isinstance(expr, Mapping) or len(expr) != 1:
        return [(where, f"an expression is a mapping with one of {', '.join(OPERATORS)}")]
    [(op, arg)] = expr.items()
    at = (*where, op)
    if op not in OPERATORS:
        return [(where, f"unknown operator {op!r}; use one of {', '.join(OPERATORS)}")]
    if op == "copy" and not _is_pointer(arg):
        return [(at, 'copy takes a JSON pointer: "" (the whole value) or "/field"')]
    if op == "ask" and not (isinstance(arg, str) and arg.strip()):
        return [(at, "ask takes the question to put to the user")]
    if op == "map":
        if not isinstance(arg, Mapping) or not isinstance(arg.get("values"), Mapping):
            return [(at, "map needs `values: {old: new}`")]
        bad = set(arg) - {"from", "values", "else"}
        if bad or arg.get("else", "keep") not in ("keep", "drop", "unmappable"):
            return [(at, "map takes from, values and else (keep, drop or unmappable)")]
        if not _is_pointer(arg.get("from", "")):
            return [((*at, "from"), "from is a JSON pointer")]
    if op == "object":
        if not isinstance(arg, Mapping) or not arg:
            return [(at, "object maps field names to expressions")]
        return [p for name, sub in arg.items() for p in expr_problems(sub, (*at, name))]
    return []


def _cases_problems(expr: Mapping[str, Any], where: tuple[str | int, ...]) -> list[Any]:
    arg = expr["cases"]
    if set(expr) - {"cases", "otherwise"}:
        return [(where, "cases takes only `otherwise` beside it")]
    if not isinstance(arg, list) or not arg:
        return [((*where, "cases"), "cases is a list of {when, then}")]
    found: list[Any] = []
    if "otherwise" in expr:
        found += expr_problems(expr["otherwise"], (*where, "otherwise"))
    for i, case in enumerate(arg):
        at = (*where, "cases", i)
        if not isinstance(case, Mapping) or set(case) != {"when", "then"}:
            found.append((at, "each case has exactly `when` and `then`"))
            continue
        found += _condition_problems(case["when"], (*at, "when"))
        found += expr_problems(case["then"], (*at, "then"))
    return found


def _condition_problems(cond: Any, at: tuple[str | int, ...]) -> list[Any]:
    ops = [k for k in cond if k != "path"] if isinstance(cond, Mapping) else []
    if len(ops) != 1 or ops[0] not in CONDITIONS:
        return [
            (at, f"a condition is {{path: PTR, OP: VALUE}} with one of {', '.join(CONDITIONS)}")
        ]
    if not _is_pointer(cond.get("path", "")):
        return [((*at, "path"), "path is a JSON pointer")]
    if ops[0] in ("in", "contains_any", "contains_all") and not isinstance(cond[ops[0]], list):
        return [((*at, ops[0]), f"{ops[0]} takes a list")]
    return []


def _is_pointer(path: Any) -> bool:
    return isinstance(path, str) and (path == "" or path.startswith("/"))
