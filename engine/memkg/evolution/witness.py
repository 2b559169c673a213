"""Confirm counterexamples against the complete schemas with `jsonschema`."""

from __future__ import annotations

from typing import Any

from .findings import Finding
from .normalize import Document, Unconfirmable


def confirm(finding: Finding, inside: Document, outside: Document) -> tuple[bool, Any]:
    """First candidate valid under `inside` and invalid under `outside` (each with its own
    draft's validator and format checker), as `(True, document)`; `(False, None)` if none."""
    for candidate in finding.candidates:
        try:
            if inside.is_valid(inside.root, candidate) and not outside.is_valid(
                outside.root, candidate
            ):
                return True, candidate
        except Unconfirmable:
            continue
    return False, None


def unresolvable_refs(doc: Document) -> list[tuple[str, str]]:
    """(pointer, ref) for every `$ref` that does not resolve inside the document."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(doc.root, "")]
    while stack:
        value, ptr = stack.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and doc.resolve(ref) is None:
                out.append((f"{ptr}/$ref", ref))
            for key, item in value.items():
                if key not in ("enum", "const", "examples", "default"):
                    stack.append((item, f"{ptr}/{key.replace('~', '~0').replace('/', '~1')}"))
        elif isinstance(value, list):
            stack.extend((item, f"{ptr}/{i}") for i, item in enumerate(value))
    return sorted(out)
