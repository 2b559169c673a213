"""Whole numbers where a key's schema declares integers.

JSON Schema counts ``2.0`` and ``1e1`` as integers (a number with no fraction), so they pass
a key declared ``"type": "integer"``; kept as written, memory would show ``2.0`` and serve a
float where the published schema promises an integer. ``as_declared`` turns them into the
integers they are, wherever the schema's ``items`` and ``properties`` say a value is one.
"""

from __future__ import annotations

from typing import Any


def as_declared(value: Any, schema: Any) -> Any:
    """``value`` with each whole float the schema declares an integer made an ``int``
    (``-0.0`` as ``0``; one past 64 bits stays as it came); ``value`` itself when nothing
    changes.

    >>> as_declared(2.0, {"type": "integer"}), as_declared(2.5, {"type": "integer"})
    (2, 2.5)
    >>> as_declared([1e1, 3], {"type": "array", "items": {"type": "integer"}})
    [10, 3]
    >>> as_declared({"n": -0.0, "x": 1.0}, {"properties": {"n": {"type": "integer"}}})
    {'n': 0, 'x': 1.0}
    """
    if not isinstance(schema, dict):
        return value
    if isinstance(value, float):
        whole = value.is_integer() and _INT64[0] <= value < _INT64[1] and _integer(schema)
        return int(value) if whole else value
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return value
        made = [as_declared(item, items) for item in value]
        return made if any(a is not b for a, b in zip(made, value, strict=True)) else value
    if isinstance(value, dict):
        fields = schema.get("properties")
        if not isinstance(fields, dict):
            return value
        made_fields = {name: as_declared(item, fields.get(name)) for name, item in value.items()}
        changed = any(made_fields[name] is not item for name, item in value.items())
        return made_fields if changed else value
    return value


_INT64 = (-(2.0**63), 2.0**63)
"""The integers memkg stores (``value.int_range``): a float past them stays a float."""


def _integer(schema: dict[str, Any]) -> bool:
    """Whether the schema declares integers (and not numbers at large)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        return "integer" in kind and "number" not in kind
    return kind == "integer"
