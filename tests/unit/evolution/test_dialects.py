"""Dialects: the default dialect, every supported draft, and keywords a dialect ignores."""

from __future__ import annotations

from typing import Any

import pytest

from memkg.evolution import SchemaError, check_schema_change

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"

OLD = {"properties": {"bar": {"type": "string"}}}
WITH_DEPS = {"properties": {"bar": {"type": "string"}}, "dependencies": {"bar": ["foo"]}}


def _codes(report: Any) -> dict[str, str]:
    return {c.code: c.severity for c in report.changes}


def test_draft07_keyword_in_a_2020_12_document_is_a_finding_not_absent() -> None:
    report = check_schema_change(OLD, WITH_DEPS)
    assert not report.compatible and report.undecided
    (change,) = report.changes
    assert change.code == "dialect.keyword_ignored"
    assert change.pointer == "/dependencies"
    assert "2020-12" in change.message and "draft-07" in change.message


def test_default_dialect_reads_dependencies_as_draft07() -> None:
    report = check_schema_change(OLD, WITH_DEPS, default_dialect="draft-07")
    assert not report.compatible and not report.undecided
    (change,) = report.breaking
    assert change.code == "object.dependency_added"
    assert change.counterexample == {"bar": "a"} or "bar" in change.counterexample


def test_default_dialect_accepts_tuple_items() -> None:
    old = {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}
    new = {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "number"}}
    with pytest.raises(SchemaError, match="tuple `items`"):
        check_schema_change(old, new)
    assert check_schema_change(old, new, default_dialect="draft-07").compatible
    assert check_schema_change(old, new, default_dialect="2019-09").compatible
    forward = check_schema_change(old, new, "forward", default_dialect="draft-04")
    assert not forward.compatible and forward.breaking[0].counterexample_valid_under == "new"


def test_dollar_schema_wins_over_the_default() -> None:
    old = {"$schema": D7, **WITH_DEPS}
    report = check_schema_change(old, {**old}, "full", default_dialect="2020-12")
    assert report.compatible and not report.changes


@pytest.mark.parametrize("name", ["draft-04", "draft-06", "draft-07", "2019-09", "2020-12", D7])
def test_every_dialect_by_name_or_uri(name: str) -> None:
    report = check_schema_change({"type": "string"}, {"type": "string", "maxLength": 3},
                                 default_dialect=name)  # fmt: skip
    assert not report.compatible and report.breaking[0].code == "string.max_length_added"


def test_unknown_default_dialect() -> None:
    with pytest.raises(SchemaError, match="unknown JSON Schema dialect"):
        check_schema_change({}, {}, default_dialect="draft-05")


def test_draft04_boolean_exclusive_maximum() -> None:
    old = {"$schema": D4, "type": "number", "maximum": 10}
    new = {"$schema": D4, "type": "number", "maximum": 10, "exclusiveMaximum": True}
    report = check_schema_change(old, new)
    assert not report.compatible
    assert report.breaking[0].counterexample == 10
    assert check_schema_change(new, old).compatible


def test_draft04_has_no_const_and_no_boolean_schemas() -> None:
    report = check_schema_change({"$schema": D4}, {"$schema": D4, "const": 1})
    assert _codes(report) == {"dialect.keyword_ignored": "unknown"}
    with pytest.raises(SchemaError, match="boolean"):
        check_schema_change({"$schema": D4, "properties": {"a": True}}, {})


def test_draft06_has_no_if() -> None:
    new = {"$schema": D6, "if": {"type": "string"}, "then": {"maxLength": 1}}
    report = check_schema_change({"$schema": D6}, new)
    assert set(_codes(report)) == {"dialect.keyword_ignored"}
    assert {c.pointer for c in report.changes} == {"/if", "/then"}


def test_2019_09_dependent_schemas_and_tuple_items() -> None:
    old = {"$schema": D2019, "type": "object"}
    new = {"$schema": D2019, "type": "object", "dependentRequired": {"card": ["billing"]}}
    report = check_schema_change(old, new)
    assert report.breaking[0].code == "object.dependency_added"
    tuple_old = {"$schema": D2019, "type": "array", "items": [{"type": "string"}]}
    tuple_new = {**tuple_old, "additionalItems": False}
    assert not check_schema_change(tuple_old, tuple_new).compatible
    assert check_schema_change(tuple_new, tuple_old).compatible


def test_2020_12_ignores_additional_items_and_recursive_ref() -> None:
    new = {"type": "array", "prefixItems": [{}], "additionalItems": False}
    report = check_schema_change({"type": "array", "prefixItems": [{}]}, new)
    assert _codes(report) == {"dialect.keyword_ignored": "unknown"}


def test_malformed_keyword_values_name_the_place() -> None:
    with pytest.raises(SchemaError, match=r"at /properties/a/maxLength: must be a non-negative"):
        check_schema_change({"properties": {"a": {"maxLength": -1}}}, {})
    with pytest.raises(SchemaError, match="regular expression"):
        check_schema_change({"pattern": "("}, {})
    with pytest.raises(SchemaError, match="must be one of"):
        check_schema_change({"type": "strng"}, {})


def test_nested_dollar_schema_of_another_dialect_is_reported() -> None:
    new = {"properties": {"a": {"$schema": D7, "type": "string"}}}
    report = check_schema_change({"properties": {"a": {"type": "string"}}}, new)
    assert [c.code for c in report.changes] == ["dialect.keyword_ignored"]


def _cli(tmp_path: Any, old: Any, new: Any, *flags: str) -> tuple[int, Any]:
    import io
    import json

    from memkg.cli import main

    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    out = io.StringIO()
    code = main(["schema", "check", str(tmp_path / "old.json"), str(tmp_path / "new.json"),
                 *flags], out)  # fmt: skip
    return code, json.loads(out.getvalue())


def test_cli_default_dialect(tmp_path: Any) -> None:
    code, report = _cli(tmp_path, OLD, WITH_DEPS)
    assert code == 3 and report["undecided"]
    assert report["changes"][0]["code"] == "dialect.keyword_ignored"
    code, report = _cli(tmp_path, OLD, WITH_DEPS, "--default-dialect", "draft-07")
    assert code == 3 and not report["undecided"]
    assert report["changes"][0]["code"] == "object.dependency_added"
    code, report = _cli(tmp_path, OLD, OLD, "--default-dialect", "draft-04", "--mode", "full")
    assert code == 0 and report["compatible"]


def test_engine_config_names_the_default_dialect() -> None:
    import pydantic

    from memkg.config import EngineConfig

    assert EngineConfig().schema_dialect == "2020-12"
    assert EngineConfig(schema_dialect="draft-07").schema_dialect == "draft-07"
    with pytest.raises(pydantic.ValidationError):
        EngineConfig(schema_dialect="draft-05")  # type: ignore[arg-type]


def test_integral_floats_are_integers_except_in_draft04() -> None:
    old = {"type": "integer", "minimum": 1, "maximum": 2}
    new = {"$schema": D4, "type": "integer"}
    report = check_schema_change(old, new)
    assert not report.compatible
    assert report.breaking[0].counterexample == 1.0
    assert check_schema_change(old, {"type": "integer"}).compatible


def test_draft04_integer_across_dialects() -> None:
    report = check_schema_change({"type": "integer"}, {"$schema": D4, "type": "integer"})
    assert not report.compatible and report.breaking[0].counterexample in (0.0, 1.0)
    assert check_schema_change({"$schema": D4, "type": "integer"}, {"type": "integer"}).compatible
    negated = {"$schema": D4, "not": {"type": "integer"}}
    report = check_schema_change(negated, {"not": {"type": "integer"}})
    assert not report.compatible
