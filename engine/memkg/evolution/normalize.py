"""Read a schema document: dialect, guards, `$ref` resolution, and the draft-neutral keyword view.

Draft-07 is mapped onto the 2020-12 vocabulary: tuple `items: [...]` becomes `prefixItems` with
`additionalItems` as `items`, `dependencies` splits into `dependentRequired`/`dependentSchemas`,
and keywords beside a draft-07 `$ref` are dropped (that draft ignores them).
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from referencing.exceptions import Unresolvable

from .errors import SchemaError

# Loaded dynamically: typed as Any whether or not stubs for jsonschema are installed.
_jsonschema: Any = importlib.import_module("jsonschema")
_exceptions: Any = importlib.import_module("jsonschema.exceptions")
JsonSchemaError: type[Exception] = _exceptions.SchemaError
best_match: Any = _exceptions.best_match

DRAFT7 = "draft-07"
DRAFT2020 = "2020-12"
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_ENUM = 5_000

_DIALECTS = {
    "http://json-schema.org/draft-07/schema": DRAFT7,
    "https://json-schema.org/draft-07/schema": DRAFT7,
    "https://json-schema.org/draft/2020-12/schema": DRAFT2020,
    "http://json-schema.org/draft/2020-12/schema": DRAFT2020,
}
_VALIDATORS: dict[str, Any] = {
    DRAFT7: _jsonschema.Draft7Validator,
    DRAFT2020: _jsonschema.Draft202012Validator,
}


class Unconfirmable(Exception):
    """Validation could not run (unresolvable reference, regex the engine rejects, ...)."""


def canonical(value: Any) -> str:
    """Canonical JSON text, so that `1`, `1.0` and `true` stay distinct where JSON says so."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _guard(schema: Any) -> None:
    stack: list[tuple[Any, int]] = [(schema, 0)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH:
            raise SchemaError(f"schema nests deeper than {MAX_DEPTH} levels")
        if seen > MAX_NODES:
            raise SchemaError(f"schema has more than {MAX_NODES} nodes")
        if isinstance(value, dict):
            enum = value.get("enum")
            if isinstance(enum, list) and len(enum) > MAX_ENUM:
                raise SchemaError(f"enum with {len(enum)} members exceeds the limit of {MAX_ENUM}")
            for key, item in value.items():
                if not isinstance(key, str):
                    raise SchemaError(f"object key {key!r} is not a string")
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


class Document:
    """One schema version: its root, dialect, validator and local `$ref` targets."""

    def __init__(self, schema: Any, label: str) -> None:
        if not isinstance(schema, (dict, bool)):
            kind = type(schema).__name__
            raise SchemaError(f"{label} schema must be an object or a boolean, got {kind}")
        self.label = label
        self.root = schema
        self.draft = DRAFT2020
        if isinstance(schema, dict) and "$schema" in schema:
            uri = schema["$schema"]
            if not isinstance(uri, str) or uri.rstrip("#") not in _DIALECTS:
                raise SchemaError(f"{label} schema uses an unsupported dialect: {uri!r}")
            self.draft = _DIALECTS[uri.rstrip("#")]
        _guard(schema)
        cls = _VALIDATORS[self.draft]
        try:
            cls.check_schema(schema)
        except JsonSchemaError as exc:
            why = getattr(exc, "message", exc)
            msg = f"{label} schema is not a valid {self.draft} schema: {why}"
            raise SchemaError(msg) from exc
        self.validator: Any = cls(schema, format_checker=cls.FORMAT_CHECKER)
        self.formats = frozenset(cls.FORMAT_CHECKER.checkers)
        self.anchors: dict[str, str] = {}
        self._collect_anchors(schema, "")

    def _collect_anchors(self, node: Any, ptr: str) -> None:
        stack = [(node, ptr)]
        while stack:
            value, where = stack.pop()
            if isinstance(value, dict):
                anchor = value.get("$anchor")
                if isinstance(anchor, str):
                    self.anchors[anchor] = where
                ident = value.get("$id")
                if self.draft == DRAFT7 and isinstance(ident, str) and ident.startswith("#"):
                    self.anchors[ident[1:]] = where
                stack.extend((v, f"{where}/{escape(k)}") for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((v, f"{where}/{i}") for i, v in enumerate(value))

    def is_valid(self, raw: Any, instance: Any) -> bool:
        """Validate `instance` against a subschema of (or built from parts of) this document."""
        try:
            return bool(self.validator.evolve(schema=raw).is_valid(instance))
        except (Unresolvable, re.error, RecursionError) as exc:
            raise Unconfirmable(str(exc)) from exc

    def resolve(self, ref: str) -> Node | None:
        """Target of a local `$ref`, or None when it points outside this document."""
        if not ref.startswith("#"):
            return None
        fragment = unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            if fragment not in self.anchors:
                return None
            fragment = self.anchors[fragment]
        value: Any = self.root
        for part in fragment.split("/")[1:] if fragment else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return None
        if not isinstance(value, (dict, bool)):
            return None
        return Node(self, value, fragment)


@dataclass(frozen=True, eq=False)
class Node:
    """A subschema together with the document it lives in and its JSON pointer there."""

    doc: Document
    raw: Any
    ptr: str
    negated: bool = False

    def child(self, *parts: str | int) -> Node:
        value = self.raw
        for part in parts:
            value = value[part]
        suffix = "".join(f"/{escape(p)}" for p in parts)
        return Node(self.doc, value, self.ptr + suffix)

    def is_valid(self, instance: Any) -> bool:
        return self.doc.is_valid(self.raw, instance) != self.negated

    def same_as(self, other: Node) -> bool:
        """Structurally identical, including what any `$ref` inside points to."""
        if self.negated != other.negated or canonical(self.raw) != canonical(other.raw):
            return False
        if self.doc is other.doc or "$ref" not in canonical(self.raw):
            return True
        return canonical(self.doc.root) == canonical(other.doc.root)


def synthetic(doc: Document, raw: Any, ptr: str) -> Node:
    """A node built by the checker (e.g. `{"required": [k]}`) evaluated in `doc`'s context."""
    return Node(doc, raw, ptr)


def view(node: Node) -> dict[str, Any]:
    """Keywords of a dict node in the 2020-12 vocabulary."""
    raw = node.raw
    if not isinstance(raw, dict):
        return {}
    if node.doc.draft == DRAFT2020:
        return {k: v for k, v in raw.items() if k not in ("additionalItems", "dependencies")}
    if "$ref" in raw:
        return {"$ref": raw["$ref"]}
    out = {k: v for k, v in raw.items() if k not in ("items", "additionalItems", "dependencies")}
    items = raw.get("items")
    if isinstance(items, list):
        out["prefixItems"] = items
        if "additionalItems" in raw:
            out["items"] = raw["additionalItems"]
    elif "items" in raw:
        out["items"] = items
    deps = raw.get("dependencies")
    if isinstance(deps, dict):
        out["dependentRequired"] = {k: v for k, v in deps.items() if isinstance(v, list)}
        out["dependentSchemas"] = {k: v for k, v in deps.items() if not isinstance(v, list)}
    return out


def in_dialect(doc: Document, keywords: dict[str, Any]) -> dict[str, Any]:
    """Keywords written in the view vocabulary, translated back to `doc`'s dialect."""
    if doc.draft == DRAFT2020:
        return keywords
    out = {
        k: v
        for k, v in keywords.items()
        if k not in ("dependentRequired", "dependentSchemas", "prefixItems", "items")
    }
    deps = {**keywords.get("dependentRequired", {}), **keywords.get("dependentSchemas", {})}
    if deps:
        out["dependencies"] = deps
    if "prefixItems" in keywords:
        out["items"] = keywords["prefixItems"]
        if "items" in keywords:
            out["additionalItems"] = keywords["items"]
    elif "items" in keywords:
        out["items"] = keywords["items"]
    return out


def view_child(node: Node, key: str, *rest: str | int) -> Node:
    """Child node addressed in view terms, mapped back to its real location in a draft-07 doc."""
    if node.doc.draft == DRAFT7 and isinstance(node.raw, dict):
        if key == "prefixItems":
            return node.child("items", *rest)
        if key == "items" and isinstance(node.raw.get("items"), list):
            return node.child("additionalItems", *rest)
        if key in ("dependentRequired", "dependentSchemas"):
            return node.child("dependencies", *rest)
    return node.child(key, *rest)
