"""JSON Schema dialects: the keywords each draft gives meaning to, and the shape of their values.

One table per dialect (draft-04, -06, -07, 2019-09, 2020-12) maps each keyword to the kind of
value it takes. `wellformed.py` walks a document with it; `normalize.view` translates a
dialect's keywords to the 2020-12 vocabulary the checker reasons in.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .errors import SchemaError

_jsonschema: Any = importlib.import_module("jsonschema")

# Kinds of keyword values.
SCHEMA = "schema"
SCHEMAS = "schemas"  # non-empty array of schemas
SCHEMA_MAP = "schema_map"  # name -> schema
PATTERN_MAP = "pattern_map"  # regex -> schema
ITEMS = "items"  # a schema, or (tuple form) an array of schemas
DEPENDENCIES = "dependencies"  # name -> schema or array of names
NAME_LISTS = "name_lists"  # name -> array of names
NUMBER = "number"
COUNT = "count"  # non-negative integer
POSITIVE = "positive"
BOOL = "bool"
REGEX = "regex"
NAMES = "names"  # array of unique strings
TYPE = "type"
ARRAY = "array"
STRING = "string"
ANY = "any"  # an annotation: any value, no meaning for validation
VALUE = "value"  # any JSON value (const)

IN_PLACE = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies"}
)
"""Keywords whose subschemas apply to the instance itself (not to a part of it)."""
REFS = ("$ref", "$dynamicRef", "$recursiveRef")
CONTAINERS = ("$defs", "definitions")
"""Keywords that only hold schemas for references: walked in every dialect, never reported."""

_DRAFT4: dict[str, str] = {
    "$schema": STRING, "id": STRING, "$ref": STRING, "title": ANY, "description": ANY,
    "default": ANY, "type": TYPE, "enum": ARRAY, "multipleOf": POSITIVE, "maximum": NUMBER,
    "exclusiveMaximum": BOOL, "minimum": NUMBER, "exclusiveMinimum": BOOL, "maxLength": COUNT,
    "minLength": COUNT, "pattern": REGEX, "format": STRING, "items": ITEMS,
    "additionalItems": SCHEMA, "maxItems": COUNT, "minItems": COUNT, "uniqueItems": BOOL,
    "maxProperties": COUNT, "minProperties": COUNT, "required": NAMES, "properties": SCHEMA_MAP,
    "patternProperties": PATTERN_MAP, "additionalProperties": SCHEMA,
    "dependencies": DEPENDENCIES, "allOf": SCHEMAS, "anyOf": SCHEMAS, "oneOf": SCHEMAS,
    "not": SCHEMA, "definitions": SCHEMA_MAP, "$defs": SCHEMA_MAP,
}  # fmt: skip
_DRAFT6 = {
    **{k: v for k, v in _DRAFT4.items() if k != "id"},
    "$id": STRING, "exclusiveMaximum": NUMBER, "exclusiveMinimum": NUMBER, "const": VALUE,
    "contains": SCHEMA, "propertyNames": SCHEMA, "examples": ANY,
}  # fmt: skip
_DRAFT7 = {
    **_DRAFT6, "if": SCHEMA, "then": SCHEMA, "else": SCHEMA, "$comment": ANY, "readOnly": ANY,
    "writeOnly": ANY, "contentMediaType": ANY, "contentEncoding": ANY,
}  # fmt: skip
_DRAFT2019 = {
    **{k: v for k, v in _DRAFT7.items() if k != "dependencies"},
    "$anchor": STRING, "$recursiveRef": STRING, "$recursiveAnchor": ANY, "$vocabulary": ANY,
    "deprecated": ANY, "contentSchema": ANY, "dependentRequired": NAME_LISTS,
    "dependentSchemas": SCHEMA_MAP, "unevaluatedItems": SCHEMA,
    "unevaluatedProperties": SCHEMA, "minContains": COUNT, "maxContains": COUNT,
}  # fmt: skip
_DRAFT2020 = {
    **{k: v for k, v in _DRAFT2019.items()
       if k not in ("$recursiveRef", "$recursiveAnchor", "additionalItems")},
    "items": SCHEMA, "prefixItems": SCHEMAS, "$dynamicRef": STRING, "$dynamicAnchor": ANY,
}  # fmt: skip

_ANNOTATIONS = frozenset(
    k for table in (_DRAFT4, _DRAFT6, _DRAFT7, _DRAFT2019, _DRAFT2020)
    for k, kind in table.items() if kind == ANY
) | {"$schema", "id", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "format"}  # fmt: skip


@dataclass(frozen=True)
class Dialect:
    """What one JSON Schema draft means by its keywords."""

    name: str
    uris: tuple[str, ...]
    keywords: dict[str, str]
    validator: Any
    ref_alone: bool
    """`$ref` makes every sibling keyword meaningless (draft-04 to draft-07)."""
    boolean_schemas: bool
    """`true`/`false` are schemas everywhere (draft-06 on; draft-04 only in two places)."""

    @property
    def id_keyword(self) -> str:
        return "id" if self.name == "draft-04" else "$id"

    @property
    def modern(self) -> bool:
        """2019-09 or later: dependentSchemas, unevaluated*, min/maxContains, `$defs`."""
        return self.name in ("2019-09", "2020-12")


def _uris(path: str, secure: bool) -> tuple[str, ...]:
    return tuple(f"{s}://json-schema.org/{path}" for s in (("https", "http") if secure else
                                                              ("http", "https")))  # fmt: skip


DIALECTS: dict[str, Dialect] = {
    d.name: d
    for d in (
        Dialect("draft-04", _uris("draft-04/schema", False), _DRAFT4,
                _jsonschema.Draft4Validator, True, False),
        Dialect("draft-06", _uris("draft-06/schema", False), _DRAFT6,
                _jsonschema.Draft6Validator, True, True),
        Dialect("draft-07", _uris("draft-07/schema", False), _DRAFT7,
                _jsonschema.Draft7Validator, True, True),
        Dialect("2019-09", _uris("draft/2019-09/schema", True), _DRAFT2019,
                _jsonschema.Draft201909Validator, False, True),
        Dialect("2020-12", _uris("draft/2020-12/schema", True), _DRAFT2020,
                _jsonschema.Draft202012Validator, False, True),
    )
}  # fmt: skip
DEFAULT_DIALECT = "2020-12"
_BY_URI = {uri: d for d in DIALECTS.values() for uri in d.uris}
MEANINGFUL = (
    frozenset(k for d in DIALECTS.values() for k in d.keywords) - _ANNOTATIONS - set(CONTAINERS)
)
"""Keywords that constrain instances in at least one dialect."""


def dialect_named(name: str) -> Dialect:
    """A dialect by its short name (`draft-07`, `2020-12`, ...) or its meta-schema URI."""
    if name in DIALECTS:
        return DIALECTS[name]
    found = _BY_URI.get(name.rstrip("#")) if isinstance(name, str) else None
    if found is None:
        names = ", ".join(DIALECTS)
        raise SchemaError(f"unknown JSON Schema dialect {name!r}; use one of {names}")
    return found


def dialect_of(schema: Any, default: Dialect, label: str) -> Dialect:
    """The dialect a document declares with `$schema`, else `default`."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return default
    uri = schema["$schema"]
    found = _BY_URI.get(uri.rstrip("#")) if isinstance(uri, str) else None
    if found is None:
        names = ", ".join(d.uris[0] for d in DIALECTS.values())
        raise SchemaError(
            f"{label} schema uses an unsupported dialect: {uri!r}; declare one of {names}"
        )
    return found


def meaningless(dialect: Dialect, keyword: str) -> list[str]:
    """Dialects that give `keyword` a meaning `dialect` does not ([] when it means something
    here, or nowhere)."""
    if keyword in dialect.keywords or keyword not in MEANINGFUL:
        return []
    return [d.name for d in DIALECTS.values() if keyword in d.keywords]
