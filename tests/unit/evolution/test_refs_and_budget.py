"""References (local only, an explicit registry, never the network), loops, and the budget."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memkg.evolution import SchemaError, check_schema_change
from memkg.evolution.budget import DEFAULT_BUDGET


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        body = json.dumps({"type": "string"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_server() -> Iterator[tuple[str, type[_Counting]]]:
    handler = type("Handler", (_Counting,), {"hits": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_remote_refs_are_never_fetched(schema_server: tuple[str, type[_Counting]]) -> None:
    url, handler = schema_server
    old = {"type": "object", "properties": {"a": {"$ref": f"{url}/s.json"}}}
    new = {"type": "object", "properties": {"a": {"type": "integer"}}}
    for mode in ("backward", "forward", "full"):
        report = check_schema_change(old, new, mode)
        assert not report.compatible
        assert "ref.unresolvable" in {c.code for c in report.changes}
    relative = {"$id": f"{url}/root.json", "properties": {"a": {"$ref": "other.json"}}}
    check_schema_change(relative, {}, "full")
    assert handler.hits == 0


def test_registry_resolves_named_documents(schema_server: tuple[str, type[_Counting]]) -> None:
    url, handler = schema_server
    registry = {f"{url}/s.json": {"type": "string", "maxLength": 5}}
    old = {"type": "object", "properties": {"a": {"$ref": f"{url}/s.json"}}}
    new = {"type": "object", "properties": {"a": {"type": "string"}}}
    report = check_schema_change(old, new, "full", registry=registry)
    assert report.breaking and {c.code for c in report.breaking} == {"string.max_length_removed"}
    assert report.breaking[0].counterexample_valid_under == "new"
    assert check_schema_change(old, new, "backward", registry=registry).compatible
    assert handler.hits == 0


def test_refs_to_embedded_ids_and_anchors_resolve() -> None:
    old = {
        "$id": "https://example.com/root.json",
        "properties": {"a": {"$ref": "item.json"}, "b": {"$ref": "#short"}},
        "$defs": {
            "item": {"$id": "item.json", "type": "string"},
            "s": {"$anchor": "short", "type": "string", "maxLength": 2},
        },
    }
    report = check_schema_change(old, old, "full")
    assert report.compatible and not report.changes


def test_in_place_ref_loop_is_refused_not_a_panic() -> None:
    with pytest.raises(SchemaError, match="never end"):
        check_schema_change({"not": {"type": "array"}, "$ref": "#"}, {}, "forward")
    with pytest.raises(SchemaError, match="never end"):
        check_schema_change({}, {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}})


def test_recursion_through_properties_is_fine() -> None:
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    assert check_schema_change(tree, tree, "full").compatible


def test_long_in_place_chain_is_refused() -> None:
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(100)}
    defs["d100"] = {"type": "string"}
    with pytest.raises(SchemaError, match="chain"):
        check_schema_change({"$ref": "#/$defs/d0", "$defs": defs}, {})


def test_unresolvable_ref_under_property_names_is_undecided_not_a_leak() -> None:
    report = check_schema_change({"propertyNames": {"$ref": "#/$defs/a"}}, {})
    assert not report.compatible and report.undecided
    assert "ref.unresolvable" in {c.code for c in report.changes}


def test_budget_exhausted_is_undecided_with_the_reason() -> None:
    old = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(30)}}
    new = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(30)}}
    small = check_schema_change(old, new, budget=50)
    assert not small.compatible and small.undecided
    (change,) = small.changes
    assert change.code == "undecidable.budget" and "50 work units" in change.message
    assert small.work == 50
    full = check_schema_change(old, new)
    assert not full.undecided and 50 < full.work <= DEFAULT_BUDGET


def test_slow_generated_pair_stays_small() -> None:
    report = check_schema_change({"maxItems": 19}, {"dependentSchemas": {"b": {}}})
    assert report.compatible
    assert report.work < 2_000


def test_a_wide_conjunction_is_charged_by_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """hundreds of object schemas under allOf, looked up key by key against an anyOf as
    wide: each lookup walks every atom, so the budget must see the width or a 30 kB request
    runs for a minute (counted: the atoms the lookups visit, not the time)."""
    from memkg.evolution import facts

    visits = [0]
    real = facts.shape_nodes

    def counted(shape: Any, key: str) -> Any:
        visits[0] += 1
        return real(shape, key)

    monkeypatch.setattr(facts, "shape_nodes", counted)
    seen = {}
    for n in (60, 120):
        old = {"allOf": [{"type": "object", "properties": {f"p{i}": {"type": "string"}}}
                         for i in range(n)]}  # fmt: skip
        new = {"anyOf": [{"type": "object", "required": [f"p{i}"]} for i in range(n)]}
        visits[0] = 0
        report = check_schema_change(old, new, budget=2_000)
        assert report.undecided and report.work == 2_000
        seen[n] = visits[0]
    # before: 230,650 and 1,772,416 visits (7.7x for twice the width); the budget bounds both
    assert seen[120] <= 1.5 * seen[60] and seen[120] < 40 * 2_000, seen


def test_budget_must_be_positive() -> None:
    with pytest.raises(SchemaError, match="budget"):
        check_schema_change({}, {}, budget=0)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"type": "string", "maxLength": 10**9}, {"type": "string", "maxLength": 10**8}),
        ({"type": "string", "minLength": 10**7}, {"type": "string", "minLength": 10**8}),
        ({"type": "array", "maxItems": 10**9}, {"type": "array", "maxItems": 10**8}),
        ({"type": "object", "maxProperties": 10**9}, {"type": "object", "maxProperties": 10**8}),
        ({"type": "string", "pattern": "^a{100000}$"}, {"type": "string", "pattern": "^b{9999}"}),
    ],
)
def test_huge_bounds_build_no_huge_candidates(old: Any, new: Any) -> None:
    report = check_schema_change(old, new, "full")
    assert not report.compatible and report.undecided
    assert report.work < 200


def test_numbers_beyond_a_double_are_refused_not_a_crash() -> None:
    with pytest.raises(SchemaError, match="digits"):
        check_schema_change({"type": "number"}, {"type": "number", "minimum": 10**400})
    report = check_schema_change({"type": "number", "maximum": 1e308}, {"maximum": -1e308})
    assert not report.compatible


def test_registry_documents_resolve_their_own_anchors_and_refs() -> None:
    registry = {
        "https://schemas.example/common.json": {
            "$defs": {"code": {"$anchor": "code", "type": "string", "pattern": "^[A-Z]{3}$"}},
            "properties": {"currency": {"$ref": "#code"}},
        }
    }
    old = {"properties": {"price": {"$ref": "https://schemas.example/common.json"}}}
    new = {"properties": {"price": {"$ref": "https://schemas.example/common.json#code"}}}
    report = check_schema_change(old, old, "full", registry=registry)
    assert report.compatible and not report.changes
    changed = check_schema_change(old, new, "backward", registry=registry)
    assert not changed.compatible
    assert changed.breaking[0].counterexample_valid_under == "old"
