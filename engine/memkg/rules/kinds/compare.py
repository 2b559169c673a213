"""What one comparison (``Test``) means, written once for both matchers.

A test compares a message property with an operand: ``eq``, ``ne``, the orders, ``in``,
``not_in``, ``contains`` (one item of a list value: list facts are one message per item),
``exists``, and the ``between`` / ``outside`` windows (``[low, high)``, wrapping past midnight
when ``low > high``). ``pattern`` is the durable-rules form, ``passes`` the Python one; the
differential test (``tests/property/test_runner_equivalence.py``) keeps them equal.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable
from datetime import date
from typing import Any

from memkg.rules.spec import Ref, Test

WILDCARD: Any = object()
"""An operand whose join partner is not bound yet: any value passes."""
Resolve = Callable[[Any], Any]
"""An operand (a value or a ``Ref``) → the value it stands for now, or ``WILDCARD``."""
CompileOperand = Callable[[Any], Any]
"""An operand → its durable-rules form (a value, or a reference to another pattern)."""

_OPS = {"ne": "$neq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}
_ORDER = {"lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge}
CONVERSE = {"eq": "eq", "ne": "ne", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}
"""``a op b`` holds exactly when ``b CONVERSE[op] a`` does (``compare`` is symmetric in what
it refuses: a missing value, mixed types); the comparisons an operand may join on."""


def minutes(value: Any) -> Any:
    """``"22:15"`` → 1335; anything else unchanged (numbers compare as they are)."""
    if isinstance(value, str) and len(value) == 5 and value[2] == ":":
        hours, mins = value.split(":")
        if hours.isdigit() and mins.isdigit():
            return int(hours) * 60 + int(mins)
    return value


JOIN_PREFIX = "_j"


def join_prop(prop: str, part: str) -> str:
    """The flat property of ``prop``'s typed copy that durable-rules joins on.

    A durable-rules join between a number and a string, against an object or a list, or to a
    missing property crashes its C core. So the durable-rules runner gives every message, for
    each property a join reads, typed copies (``join_copies``), and compiled joins
    (``join_pattern``) test the type first and compare only values of one type.
    """
    return f"{JOIN_PREFIX}{part}_{prop.replace('.', '/')}"


def join_copies(value: Any) -> dict[str, Any]:
    """``value``'s copies for joins: ``t`` its type (``n`` number or boolean, ``s`` string,
    ``o`` object or list), ``v`` the value (a string as ``order_text``, an object as the
    SHA-256 of its canonical JSON), ``k`` a text equal for two values exactly when they are
    equal; none for a missing value. Ordering tests on a string constant read them too
    (``pattern``)."""
    if value is None:
        return {}
    if isinstance(value, bool | int | float):
        number = value if isinstance(value, float) and not value.is_integer() else int(value)
        return {"t": "n", "v": number, "k": f"n:{number!r}"}
    if isinstance(value, str):
        return {"t": "s", "v": order_text(value), "k": "s:" + value}
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()  # the C core reads 65,535 bytes at most
    return {"t": "o", "v": digest, "k": "o:" + digest}


_ORDER_TEXT = {c: f"{c // 16}{c % 16:x}" for c in range(0x60)}


def order_text(text: str) -> str:
    """``text`` as durable-rules orders strings: its C core compares the JSON text it was sent,
    escapes included (``"`` is written ``\\"``, which sorts after ``M``). Every character
    below U+0060 becomes two (``0``-``5``, then a hex digit) that JSON writes as they are, so
    the bytes of the result sort as the characters of ``text`` do.

    >>> order_text('"Bob"') < order_text("M") < order_text("b")
    True
    """
    return text.translate(_ORDER_TEXT)


def join_pattern(op: str, prop: str, ref: dict[str, str]) -> dict[str, Any]:
    """``prop op ref`` for a join, as ``compare`` decides it, on typed copies: the type tests
    come first, so durable-rules never compares a mixed pair."""
    [(alias, other)] = ref.items()

    def on(part: str, test: str | None = None) -> dict[str, Any]:
        body = {join_prop(prop, part): {alias: join_prop(other, part)}}
        return {test: body} if test else body

    tag = join_prop(prop, "t")
    if op in ("eq", "contains"):
        return {"$and": [{"$ex": {tag: 1}}, on("k")]}
    if op == "ne":
        return {"$and": [{"$ex": {tag: 1}}, on("k", "$neq")]}
    return {"$and": [{"$ex": {tag: 1}}, on("t"), {"$neq": {tag: "o"}}, on("v", _OPS[op])]}


def day_number(day: date) -> int:
    return day.year * 10_000 + day.month * 100 + day.day


def lookup(props: dict[str, Any], prop: str) -> Any:
    """The value at dotted ``prop`` of a message, or None."""
    if "." not in prop:  # most properties are not nested: one dict read
        return props.get(prop) if isinstance(props, dict) else None
    value: Any = props
    for part in prop.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def compare(op: str, actual: Any, expected: Any) -> bool:
    """``actual op expected``; a missing property (None) on either side never compares."""
    if actual is None:
        return False
    if expected is WILDCARD:
        return True
    if expected is None:
        return False
    if op in ("eq", "contains"):  # durable-rules compares booleans as the numbers 0 and 1
        return bool(actual == expected)
    if op == "ne":
        return bool(actual != expected)
    numeric = (int, float)
    if not (isinstance(actual, numeric) and isinstance(expected, numeric)) and not (
        isinstance(actual, str) and isinstance(expected, str)
    ):
        return False
    return bool(_ORDER[op](actual, expected))


def passes(test: Test, props: dict[str, Any], prop: str, resolve: Resolve) -> bool:
    """Whether message ``props`` passes ``test`` on property ``prop``."""
    actual = lookup(props, prop)
    if test.op == "exists":
        return (actual is not None) == bool(test.operand)
    if test.op in ("in", "not_in"):
        inside = actual in [minutes(v) for v in test.operand]
        return inside if test.op == "in" else actual is not None and not inside
    if test.op in ("between", "outside"):
        if not isinstance(actual, int | float):
            return False
        low, high = minutes(test.operand[0]), minutes(test.operand[1])
        inside = low <= actual < high if low <= high else (actual >= low or actual < high)
        return inside if test.op == "between" else not inside
    return compare(test.op, actual, resolve(test.operand))


def any_of(prop: str, values: Any) -> dict[str, Any]:
    """``prop`` equals one of ``values`` (each once: durable-rules fires once per option)."""
    options = [{prop: v} for v in dict.fromkeys(minutes(v) for v in values)]
    return options[0] if len(options) == 1 else {"$or": options}


def _window(prop: str, low: Any, high: Any, inside: bool) -> dict[str, Any]:
    """``inside``: low ≤ x < high (wrapping past midnight when low > high); else the rest."""
    low, high = minutes(low), minutes(high)
    wraps = low > high
    if inside != wraps:
        return (
            {"$and": [{"$gte": {prop: low}}, {"$lt": {prop: high}}]}
            if inside
            else {"$and": [{"$gte": {prop: high}}, {"$lt": {prop: low}}]}
        )
    if inside:  # wrapping window: x ≥ low or x < high
        return {"$or": [{"$gte": {prop: low}}, {"$lt": {prop: high}}]}
    return {"$or": [{"$lt": {prop: low}}, {"$gte": {prop: high}}]}


def pattern(test: Test, prop: str, operand: CompileOperand) -> dict[str, Any]:
    """The durable-rules form of ``test`` on property ``prop``."""
    op, value = test.op, test.operand
    compiled = operand(value)
    if isinstance(value, Ref) and isinstance(compiled, dict):
        return join_pattern(op, prop, compiled)
    if op in ("eq", "contains"):
        return {prop: operand(value)}
    if op in _ORDER and isinstance(compiled, str):  # on the typed copies, as a join
        text = order_text(compiled)
        return {"$and": [{join_prop(prop, "t"): "s"}, {_OPS[op]: {join_prop(prop, "v"): text}}]}
    if op in _OPS:
        return {_OPS[op]: {prop: operand(value)}}
    if op == "in":
        return any_of(prop, value)
    if op == "not_in":
        return {"$and": [{"$neq": {prop: minutes(v)}} for v in value]}
    if op == "exists":
        return {"$ex" if value else "$nex": {prop: 1}}
    return _window(prop, value[0], value[1], inside=op == "between")
