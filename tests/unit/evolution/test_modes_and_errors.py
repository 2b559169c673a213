"""Modes (incl. transitive), error handling, report models and text rendering."""

from __future__ import annotations

import pydantic
import pytest

from memkg.evolution import (
    CompatibilityReport,
    Mode,
    SchemaChange,
    SchemaError,
    check_schema_change,
)

V1 = {"type": "object", "properties": {"size": {"enum": ["s", "m", "l"]}}}
V2 = {"type": "object", "properties": {"size": {"enum": ["s", "m", "l", "xl"]}}}
V3 = {"type": "object", "properties": {"size": {"enum": ["m", "l", "xl"]}}}


def test_backward_and_forward_of_a_widening() -> None:
    assert check_schema_change(V1, V2, "backward").compatible
    report = check_schema_change(V1, V2, "forward")
    assert not report.compatible
    (change,) = report.changes
    assert change.code == "enum.value_added"
    assert change.breaks == ("forward",)
    assert change.counterexample == {"size": "xl"}
    assert change.counterexample_valid_under == "new"


def test_safe_changes_are_listed_with_their_direction() -> None:
    report = check_schema_change(V1, V2, "backward")
    assert report.compatible and not report.undecided
    (change,) = report.changes
    assert change.severity == "safe" and change.breaks == ("forward",)


def test_full_mode_needs_both_directions() -> None:
    assert not check_schema_change(V1, V2, "full").compatible
    assert check_schema_change(V1, dict(V1), "full").compatible


def test_list_of_versions_non_transitive_uses_last() -> None:
    assert check_schema_change([V1, V3], {**V3}, "backward").compatible
    assert check_schema_change([V3, V1], V2, "backward").compatible


def test_backward_transitive_checks_every_version() -> None:
    # V3 drops "s": compatible with... nothing earlier that had "s".
    assert not check_schema_change([V1, V2], V3, "backward").compatible
    widened = {"type": "object", "properties": {"size": {"enum": ["s", "m", "l", "xl", "xxl"]}}}
    report = check_schema_change([V1, V2], widened, "backward-transitive")
    assert report.compatible
    report = check_schema_change([V1, V3], widened, "forward-transitive")
    assert not report.compatible
    assert {c.against for c in report.changes if c.severity == "breaking"} == {0, 1}


def test_transitive_catches_break_against_older_version_only() -> None:
    old = {"type": "string", "maxLength": 10}
    mid = {"type": "string", "maxLength": 20}
    new = {"type": "string", "maxLength": 5, "minLength": 0}
    mid_to_new = {"type": "string", "maxLength": 20, "minLength": 0}
    assert check_schema_change([old, mid], mid_to_new, "backward").compatible
    assert check_schema_change([old, mid], mid_to_new, "backward-transitive").compatible
    report = check_schema_change([old, mid], new, "full-transitive")
    assert not report.compatible
    assert {c.against for c in report.changes} == {0, 1}


def test_mode_none_is_always_compatible() -> None:
    report = check_schema_change({"type": "string"}, {"type": "integer"}, "none")
    assert report.compatible and report.mode is Mode.NONE
    assert all(c.severity == "safe" for c in report.changes)
    assert report.changes


def test_unknown_mode() -> None:
    with pytest.raises(SchemaError, match="unknown compatibility mode"):
        check_schema_change({}, {}, "sideways")


@pytest.mark.parametrize("bad", [[{"type": "string"}], "string", 3, None])
def test_new_not_a_schema(bad: object) -> None:
    with pytest.raises(SchemaError):
        check_schema_change({}, bad, "backward")  # type: ignore[arg-type]


def test_old_not_a_schema() -> None:
    with pytest.raises(SchemaError):
        check_schema_change("nope", {}, "backward")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="no earlier"):
        check_schema_change([], {}, "backward")


def test_unknown_dialect() -> None:
    schema = {"$schema": "http://json-schema.org/draft-03/schema#", "type": "string"}
    with pytest.raises(SchemaError, match="unsupported dialect"):
        check_schema_change(schema, {"type": "string"})


def test_invalid_schema_keyword_value() -> None:
    with pytest.raises(SchemaError, match="not a valid"):
        check_schema_change({"type": "strng"}, {"type": "string"})


def test_schema_error_is_value_error() -> None:
    assert issubclass(SchemaError, ValueError)


def test_deeply_nested_schema_rejected() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(5000):
        deep = {"items": deep}
    with pytest.raises(SchemaError, match="deeper"):
        check_schema_change(deep, deep)


def test_huge_enum_rejected() -> None:
    with pytest.raises(SchemaError, match="enum"):
        check_schema_change({"enum": list(range(100_000))}, {"type": "integer"})


def test_large_enum_within_limit_is_fast() -> None:
    old = {"enum": [f"v{i}" for i in range(2000)]}
    new = {"enum": [f"v{i}" for i in range(1, 2000)]}
    report = check_schema_change(old, new)
    assert not report.compatible
    assert report.changes[0].counterexample == "v0"


def test_to_text_lists_changes_examples_and_hints() -> None:
    report = check_schema_change(
        {"enum": ["kosher", "halal"]}, {"enum": ["halal", "paleo"]}, "full"
    )
    text = report.to_text()
    assert text.startswith("Schema change is INCOMPATIBLE (mode: full)")
    assert "enum.value_removed" in text and "enum.value_added" in text
    assert "keep 'kosher' in the enum or ship a migration that maps it" in text
    assert '"kosher" (valid under old, rejected by new)' in text


def test_to_text_undecided_and_compatible() -> None:
    same = check_schema_change({"type": "string"}, {"type": "string"})
    assert "compatible (mode: backward)" in same.to_text()
    assert "no differences" in same.to_text()
    undecided = check_schema_change(
        {"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^[ab]+$"}
    )
    assert undecided.undecided and not undecided.compatible
    assert "could not be decided" in undecided.to_text()
    assert "undecidable.pattern" in undecided.to_text()


def test_models_are_frozen_and_strict() -> None:
    report = check_schema_change({"type": "integer"}, {"type": "number"}, "forward")
    assert isinstance(report, CompatibilityReport)
    change = report.changes[0]
    assert isinstance(change, SchemaChange)
    with pytest.raises(pydantic.ValidationError):
        change.code = "x"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        SchemaChange(
            code="a", pointer="", breaks=(), severity="safe", message="", fix_hint="", surprise=1
        )  # type: ignore[call-arg]


def test_pointer_and_fix_hint_for_required() -> None:
    report = check_schema_change(
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    )
    (change,) = report.changes
    assert change.code == "object.property_required"
    assert change.pointer == "/required"
    assert "optional" in change.fix_hint
    assert change.counterexample == {}


def test_schema_error_is_a_memkg_error() -> None:
    from memkg.errors import MemkgError

    with pytest.raises(MemkgError) as info:
        check_schema_change([1], {})  # type: ignore[list-item]
    assert info.value.code == "evolution.schema_error"
