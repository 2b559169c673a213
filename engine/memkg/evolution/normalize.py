"""Read a schema document: dialect, references, and the draft-neutral keyword view.

Every dialect is mapped onto the 2020-12 vocabulary the checker reasons in: tuple
`items: [...]` becomes `prefixItems` with `additionalItems` as `items`, `dependencies` splits
into `dependentRequired`/`dependentSchemas`, draft-04's boolean `exclusiveMaximum` becomes a
number, and keywords the dialect ignores (beside a draft-07 `$ref`, or from another draft) are
left out of the view and reported by the check.

References resolve only inside the documents given and the resources the caller passes:
nothing is ever fetched.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from memkg.errors import PatternTimeout
from memkg.userschema import bounded

from .budget import Budget
from .dialect import MEANINGFUL, Dialect, dialect_of
from .errors import SchemaError
from .wellformed import Inventory, escape, walk

_exceptions: Any = importlib.import_module("jsonschema.exceptions")
best_match: Any = _exceptions.best_match
_specifications: Any = importlib.import_module("referencing.jsonschema")
_SPECS = {
    "draft-04": _specifications.DRAFT4,
    "draft-06": _specifications.DRAFT6,
    "draft-07": _specifications.DRAFT7,
    "2019-09": _specifications.DRAFT201909,
    "2020-12": _specifications.DRAFT202012,
}
MAX_IN_PLACE = 64
"""Longest chain of subschemas (and references) applied to one instance without descending."""
_REFERS = re.compile(r'"\$(ref|dynamicRef|recursiveRef)":')
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
           "minContains", "maxContains")  # fmt: skip

__all__ = ["Document", "Node", "Resources", "Unconfirmable", "canonical", "escape", "view"]


class Unconfirmable(Exception):
    """Validation could not run (unresolvable reference, regex the engine rejects, ...)."""


def canonical(value: Any) -> str:
    """Canonical JSON text, so that `1`, `1.0` and `true` stay distinct where JSON says so."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class Resources:
    """Schemas the caller hands over for references to other documents (URI -> schema).

    Shared by the documents of one check; each resource is read (and checked) when a
    reference first reaches it.
    """

    def __init__(self, schemas: Mapping[str, Any], default: Dialect, budget: Budget) -> None:
        self.schemas = {urldefrag(uri)[0]: schema for uri, schema in schemas.items()}
        self.default = default
        self.budget = budget
        self.docs: dict[str, Document] = {}
        registry: Any = Registry()
        for uri, schema in self.schemas.items():
            dialect = dialect_of(schema, default, f"registry {uri}")
            resource = Resource.from_contents(schema, default_specification=_SPECS[dialect.name])
            registry = registry.with_resource(uri, resource)
        self.registry = registry

    def document(self, uri: str) -> Document | None:
        if uri not in self.schemas:
            return None
        if uri not in self.docs:
            self.docs[uri] = Document(self.schemas[uri], f"registry {uri}", self.default,
                                      self.budget, self, uri=uri)  # fmt: skip
        return self.docs[uri]


class Document:
    """One schema version: its root, dialect, validator and resolvable `$ref` targets."""

    def __init__(self, schema: Any, label: str, default: Dialect, budget: Budget,
                 resources: Resources, uri: str = "") -> None:  # fmt: skip
        if not isinstance(schema, (dict, bool)):
            kind = type(schema).__name__
            raise SchemaError(f"{label} schema must be an object or a boolean, got {kind}")
        self.label = label
        self.root = schema
        self.dialect = dialect_of(schema, default, label)
        self.budget = budget
        self.resources = resources
        self.inv: Inventory = walk(schema, self.dialect, label, uri)
        self.bases = {r.ptr: r.base for r in self.inv.refs}
        cls = bounded(self.dialect.validator)
        self.validator: Any = cls(schema, format_checker=cls.FORMAT_CHECKER,
                                  registry=resources.registry)  # fmt: skip
        self.formats = frozenset(cls.FORMAT_CHECKER.checkers)
        self._validators: dict[int, tuple[Any, Any, int, dict[str, bool]]] = {}
        """Per subschema: validator, cost in work units (one per 32 schemas, plus one), and
        the answers it gave, by canonical instance."""
        self._views: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.shapes: dict[tuple[int, str, bool], tuple[Any, Any]] = {}
        """Object shape of a subschema (see `facts.shape`)."""
        self.examples: dict[Any, tuple[tuple[Any, ...], list[Any]]] = {}
        """Instances generated for a conjunction of subschemas (see `generate.examples`)."""
        self._check_loops()

    @property
    def draft(self) -> str:
        return self.dialect.name

    def is_valid(self, raw: Any, instance: Any) -> bool:
        """Validate `instance` against a subschema of (or built from parts of) this document."""
        held = self._validators.get(id(raw))
        if held is None or held[0] is not raw:
            held = (raw, self.validator.evolve(schema=raw), 1 + _size(raw) // 32, {})
            self._validators[id(raw)] = held
        key = repr(instance)  # tells 1, 1.0 and True apart, as JSON Schema does
        known = held[3].get(key)
        if known is not None:
            return known
        self.budget.charge(held[2])
        try:
            answer = bool(held[1].is_valid(instance))
        except (Unresolvable, re.error, RecursionError, PatternTimeout) as exc:
            raise Unconfirmable(str(exc)) from exc
        held[3][key] = answer
        return answer

    def view(self, raw: Any) -> dict[str, Any]:
        held = self._views.get(id(raw))
        if held is None or held[0] is not raw:
            held = (raw, _translate(raw, self.dialect))
            self._views[id(raw)] = held
        return held[1]

    def resolve(self, ref: str, at: str = "") -> Node | None:
        """Target of a `$ref` written at pointer `at`, or None when it leaves the documents and
        resources given."""
        base = self.bases.get(at, self.inv.base)
        uri, fragment = urldefrag(urljoin(base, ref) if base else ref)
        if not uri or uri == self.inv.base:
            return self._locate(self.inv.base, "", unquote(fragment))
        if uri in self.inv.ids:
            return self._locate(uri, self.inv.ids[uri], unquote(fragment))
        other = self.resources.document(uri)
        return None if other is None else other._locate(uri, "", unquote(fragment))

    def _locate(self, uri: str, start: str, fragment: str) -> Node | None:
        if fragment and not fragment.startswith("/"):
            found = self.inv.anchors.get((uri, fragment))
            if found is None:
                return None
            pointer = found
        else:
            pointer = start + fragment
        value: Any = self.root
        for part in pointer.split("/")[1:] if pointer else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return None
        if not isinstance(value, (dict, bool)):
            return None
        return Node(self, value, pointer)

    def _check_loops(self) -> None:
        """Refuse references that loop without descending into the instance: validating
        against them recurses until the interpreter's stack runs out."""
        edges: dict[str, list[str]] = {p: list(c) for p, c in self.inv.in_place.items()}
        for ref in self.inv.refs:
            target = self.resolve(ref.value, ref.ptr)
            if target is not None and target.doc is self:
                edges.setdefault(ref.ptr, []).append(target.ptr)
        state: dict[str, int] = {}
        height: dict[str, int] = {}
        for start in list(edges):
            if start in state:
                continue
            state[start] = 1
            stack = [(start, iter(edges[start]))]
            while stack:
                node, rest = stack[-1]
                nxt = next(rest, None)
                if nxt is None:
                    stack.pop()
                    state[node] = 2
                    height[node] = 1 + max((height.get(c, 0) for c in edges[node]), default=0)
                    if height[node] > MAX_IN_PLACE:
                        raise SchemaError(
                            f"{self.label} schema applies more than {MAX_IN_PLACE} subschemas"
                            f" in a chain at {node or '/'}; flatten the allOf/$ref chain"
                        )
                elif state.get(nxt) == 1:
                    raise SchemaError(
                        f"{self.label} schema at {node or '/'} leads back to {nxt or '/'} without"
                        " descending into the document, so validation would never end; point"
                        " the $ref at a subschema under properties or items instead"
                    )
                elif nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(edges.get(nxt, ()))))
                    edges.setdefault(nxt, [])


def _size(raw: Any) -> int:
    """Objects in a schema, a bound on the work of validating against it."""
    count, stack = 0, [raw]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            count += 1
            stack.extend(v for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, (dict, list)))
    return count


def _translate(raw: Any, dialect: Dialect) -> dict[str, Any]:
    """Keywords of a schema in the 2020-12 vocabulary."""
    if not isinstance(raw, dict):
        return {}
    if dialect.ref_alone and "$ref" in raw:
        return {"$ref": raw["$ref"]}
    keywords = dialect.keywords
    out = {k: v for k, v in raw.items() if k in keywords or k not in MEANINGFUL}
    for key in _COUNTS:
        if isinstance(out.get(key), float):
            out[key] = int(out[key])
    if dialect.name == "2020-12":
        return out
    items = raw.get("items")
    if isinstance(items, list):
        out["prefixItems"] = items
        out.pop("items")
        if "additionalItems" in raw:
            out["items"] = raw["additionalItems"]
    out.pop("additionalItems", None)
    deps = out.pop("dependencies", None)
    if isinstance(deps, dict):
        out["dependentRequired"] = {k: v for k, v in deps.items() if isinstance(v, list)}
        out["dependentSchemas"] = {k: v for k, v in deps.items() if not isinstance(v, list)}
    if dialect.name == "draft-04":
        for bound, flag in (("maximum", "exclusiveMaximum"), ("minimum", "exclusiveMinimum")):
            exclusive = out.pop(flag, False)
            if exclusive is True and bound in out:
                out[flag] = out.pop(bound)
    return out


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
        if self.negated != other.negated:
            return False
        if self.raw is other.raw and self.doc is other.doc:
            return True
        if self.doc.dialect is not other.doc.dialect:
            return False
        if canonical(self.raw) != canonical(other.raw):
            return False
        if self.doc is other.doc or not _REFERS.search(canonical(self.raw)):
            return True
        return canonical(self.doc.root) == canonical(other.doc.root)


def synthetic(doc: Document, raw: Any, ptr: str) -> Node:
    """A node built by the checker (e.g. `{"required": [k]}`) evaluated in `doc`'s context."""
    return Node(doc, raw, ptr)


def view(node: Node) -> dict[str, Any]:
    """Keywords of a dict node in the 2020-12 vocabulary."""
    return node.doc.view(node.raw)


def in_dialect(doc: Document, keywords: dict[str, Any]) -> dict[str, Any]:
    """Keywords written in the view vocabulary, translated back to `doc`'s dialect."""
    if doc.dialect.modern:
        if doc.draft == "2019-09" and "prefixItems" in keywords:
            out = {k: v for k, v in keywords.items() if k not in ("prefixItems", "items")}
            out["items"] = keywords["prefixItems"]
            if "items" in keywords:
                out["additionalItems"] = keywords["items"]
            return out
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
    """Child node addressed in view terms, mapped back to its real location in the document."""
    if node.doc.draft != "2020-12" and isinstance(node.raw, dict):
        if key == "prefixItems":
            return node.child("items", *rest)
        if key == "items" and isinstance(node.raw.get("items"), list):
            return node.child("additionalItems", *rest)
        if key in ("dependentRequired", "dependentSchemas") and not node.doc.dialect.modern:
            return node.child("dependencies", *rest)
    return node.child(key, *rest)
