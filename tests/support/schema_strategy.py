"""Hypothesis strategies from the JSON Schemas pydantic writes (a small, strict subset).

Objects draw their required properties and some optional ones; strings honour ``pattern``
and lengths; numbers their bounds; ``anyOf``, ``enum``, ``const`` and local ``$ref`` work.
An empty schema draws any JSON value.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from hypothesis import strategies as st

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=8,
)  # fmt: skip


def from_schema(
    schema: dict[str, Any], root: dict[str, Any] | None = None
) -> st.SearchStrategy[Any]:
    root = root or schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return st.deferred(lambda: from_schema(target, root))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, root) for s in schema[key]])
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return from_schema(schema["allOf"][0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, root) for k in kind])
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(2**31) - 1) + 1)
        high = schema.get("maximum", schema.get("exclusiveMaximum", 2**31 + 1) - 1)
        return st.integers(low, high)
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"),
                         allow_nan=False, allow_infinity=False)  # fmt: skip
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: (
                    len(s) <= schema.get("maxLength", 10**6)
                    and len(s) >= schema.get("minLength", 0)
                )
            )
        if schema.get("format") == "date-time":
            return st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())
        return st.text(min_size=schema.get("minLength", 0),
                       max_size=min(schema.get("maxLength", 24), 24))  # fmt: skip
    if kind == "array":
        items = from_schema(schema.get("items", {}), root)
        return st.lists(items, min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", 3), 3))  # fmt: skip
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = {k: from_schema(v, root) for k, v in properties.items() if k in required}
        optional = {k: from_schema(v, root) for k, v in properties.items() if k not in required}
        extra = schema.get("additionalProperties")
        base = st.fixed_dictionaries(fixed, optional=optional)
        if isinstance(extra, dict) and extra and not properties:
            return st.dictionaries(st.text(min_size=1, max_size=8), from_schema(extra, root),
                                   max_size=min(schema.get("maxProperties", 3), 3))  # fmt: skip
        return base
    return JSON
