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
    """(pointer, ref) for every reference that resolves neither inside the documents given nor
    in the caller's resources (nothing is fetched)."""
    out = {
        (f"{ref.ptr}/{ref.keyword}", ref.value)
        for ref in doc.inv.refs
        if doc.resolve(ref.value, ref.ptr) is None
    }
    return sorted(out)
