"""A key's ``x-memkg`` block and its name are checked when the schema loads.

A string ``"false"`` read as true, an hours count given as text, a negative validity or a key
name the write path refuses would each load, then break every write of the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memkg.errors import ConfigError
from memkg.roots import builtin
from memkg.scaffold import files_for
from memkg.validate.registry import SchemaRegistry

FILE = "schemas/demo/profile@1.json"


def registry(tmp_path: Path, key: str, meta: dict[str, Any]) -> SchemaRegistry:
    folder = tmp_path / "schemas" / "demo"
    folder.mkdir(parents=True)
    doc = json.loads(files_for("demo")[FILE])
    doc["properties"][key] = {"type": "string", "x-memkg": meta}
    (folder / "profile@1.json").write_text(json.dumps(doc))
    return SchemaRegistry(tmp_path / "schemas")


BASE = {"kind": "state", "sensitivity": "public"}


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("consent", "false", "true or false"),
        ("multi", "false", "true or false"),
        ("multi", 1, "true or false"),
        ("valid_for_hours", "72", "whole number of hours"),
        ("valid_for_hours", -5, "whole number of hours"),
        ("valid_for_hours", 0, "whole number of hours"),
        ("valid_for_hours", 1.5, "whole number of hours"),
        ("valid_for_hours", True, "whole number of hours"),
        ("staleness_days", "30", "whole number of days"),
        ("staleness_days", 0, "whole number of days"),
        ("entity", 3, "class name"),
        ("context", "trip_type", "list of context field names"),
        ("context", ["Trip Type"], "list of context field names"),
        ("kind", "fakt", "fact"),
        ("sensitivity", 1, "public"),
    ],
)
def test_a_mistyped_x_memkg_field_is_refused_naming_file_key_field_and_what_is_allowed(
    tmp_path: Path, field: str, value: Any, allowed: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        registry(tmp_path, "demo.x", {**BASE, field: value})
    assert refused.value.code == "schema.meta"
    message = refused.value.message
    assert message.startswith(f"{FILE}: key 'demo.x': x-memkg.{field} ")
    assert json.dumps(value) in message and allowed in message


def test_well_typed_fields_load_as_given(tmp_path: Path) -> None:
    meta = {**BASE, "consent": False, "multi": False, "valid_for_hours": 72,
            "staleness_days": 30, "context": ["trip_type"], "entity": "Injury"}  # fmt: skip
    spec = registry(tmp_path, "demo.x", meta).spec("demo", "demo.x")
    assert spec is not None
    assert (spec.consent, spec.multi, spec.valid_for_hours, spec.staleness_days) == (
        False, False, 72, 30)  # fmt: skip
    assert spec.context == ("trip_type",) and spec.entity == "Injury"


@pytest.mark.parametrize("key", ["Cardio.Name", "cardio.bügdet", "a..b", "1x", "a.b.c.d.e.f.g.h.i"])
def test_a_key_name_the_write_path_refuses_is_refused_at_load(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as refused:
        registry(tmp_path, key, {"kind": "preference", "sensitivity": "public"})
    assert refused.value.code == "schema.invalid"
    message = refused.value.message
    assert message.startswith(f"{FILE}: key {key!r}: ") and "lowercase" in message


def test_an_unknown_name_is_shown_short_however_long() -> None:
    registry = SchemaRegistry(builtin("examples") / "schemas")
    for domain, key in (("x" * 1_000_000, "k"), ("travel", "k" * 1_000_000)):
        message = registry.unknown_key(domain, key)
        assert len(message) < 1_000
    assert "did you mean travel?" in registry.unknown_key("trave", "k")


@pytest.mark.parametrize(
    "schema",
    [{"type": "string"}, {}, {"type": ["array", "string"]}, {"enum": [["a"], "a"]},
     {"type": "object"}],
)  # fmt: skip
def test_multi_on_a_key_whose_value_is_not_a_list_is_refused(
    tmp_path: Path, schema: dict[str, Any]
) -> None:
    """``multi`` means the value is a list whose items combine by union: on a string key,
    claims were folded into a list of strings the key's own schema refuses."""
    folder = tmp_path / "schemas" / "demo"
    folder.mkdir(parents=True)
    doc = json.loads(files_for("demo")[FILE])
    doc["properties"]["demo.x"] = {**schema, "x-memkg": {**BASE, "multi": True}}
    (folder / "profile@1.json").write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as refused:
        SchemaRegistry(tmp_path / "schemas")
    assert refused.value.code == "schema.meta"
    message = refused.value.message
    assert message.startswith(f"{FILE}: key 'demo.x': x-memkg.multi is true")
    assert '"type": "array"' in message and "drop multi" in message


def test_multi_on_a_list_key_loads(tmp_path: Path) -> None:
    folder = tmp_path / "schemas" / "demo"
    folder.mkdir(parents=True)
    doc = json.loads(files_for("demo")[FILE])
    doc["properties"]["demo.x"] = {"type": "array", "items": {"type": "string"},
                                   "x-memkg": {**BASE, "multi": True}}  # fmt: skip
    (folder / "profile@1.json").write_text(json.dumps(doc))
    spec = SchemaRegistry(tmp_path / "schemas").spec("demo", "demo.x")
    assert spec is not None and spec.multi


def test_the_shipped_multi_keys_are_lists() -> None:
    registry = SchemaRegistry(builtin("examples") / "schemas")
    specs = [registry.spec(d, k) for d in registry.domains() for k in registry.keys(d)]
    assert specs
    for spec in specs:
        assert spec is not None and (not spec.multi or spec.schema["type"] == "array"), spec
