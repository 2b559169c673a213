"""Key-group files as a careless author or an attacker writes them: every problem is a
``ConfigError`` naming the file (and line where JSON gives one), never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memkg import userschema
from memkg.errors import ConfigError
from memkg.validate.registry import SchemaRegistry

FILE = "schemas/pets/pet@1.json"
KEY = {"type": "string", "x-memkg": {"kind": "preference"}}


def refused(tmp_path: Path, content: str | bytes, code: str = "schema.parse") -> ConfigError:
    folder = tmp_path / "schemas" / "pets"
    folder.mkdir(parents=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    (folder / "pet@1.json").write_bytes(data)
    with pytest.raises(ConfigError) as caught:
        SchemaRegistry(tmp_path / "schemas")
    assert caught.value.code == code, caught.value.message
    assert caught.value.message.startswith(FILE), caught.value.message
    return caught.value


def group(properties: str) -> str:
    return '{"x-memkg": {"version": 1}, "properties": ' + properties + "}"


def test_nesting_past_the_limit_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    error = refused(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert "nested more than" in error.message


def test_a_schema_nested_deep_enough_to_crash_validation_is_refused(tmp_path: Path) -> None:
    deep = '{"not": ' * 400 + "{}" + "}" * 400
    key = '{"x-memkg": {"kind": "preference"}, "allOf": [' + deep + "]}"
    error = refused(tmp_path, group('{"a.b": ' + key + "}"))
    assert "nested more than" in error.message and "flatten" in error.message


def test_nesting_within_the_limit_loads(tmp_path: Path) -> None:
    depth = userschema.MAX_DEPTH - 8
    inner = '{"not": ' * depth + "{}" + "}" * depth
    key = '{"x-memkg": {"kind": "preference"}, "allOf": [' + inner + "]}"
    folder = tmp_path / "schemas" / "pets"
    folder.mkdir(parents=True)
    (folder / "pet@1.json").write_text(group('{"a.b": ' + key + "}"))
    assert SchemaRegistry(tmp_path / "schemas").keys("pets") == ["a.b"]


@pytest.mark.parametrize(
    ("doc", "what"),
    [
        ("[1]", "a JSON object"),
        ('{"x-memkg": "v1", "properties": {}}', "x-memkg"),
        ('{"x-memkg": {"version": 1}, "properties": [1]}', "properties"),
    ],
)
def test_a_file_of_the_wrong_shape_is_refused(tmp_path: Path, doc: str, what: str) -> None:
    error = refused(tmp_path, doc, "schema.invalid")
    assert what in error.message


def test_a_duplicate_key_is_refused_not_silently_overwritten(tmp_path: Path) -> None:
    text = group('{\n"a.b": ' + json.dumps(KEY) + ',\n"a.b": {"type": "number", '
                 '"x-memkg": {"kind": "preference"}}}')  # fmt: skip
    error = refused(tmp_path, text)
    assert "'a.b' appears twice" in error.message and ":3:" in error.message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(tmp_path: Path, constant: str) -> None:
    key = '{"type": "number", "maximum": ' + constant + ', "x-memkg": {"kind": "preference"}}'
    error = refused(tmp_path, group('{"a.b": ' + key + "}"))
    assert constant in error.message and "finite" in error.message


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(userschema, "MAX_FILE_BYTES", 1_000)
    error = refused(tmp_path, group("{}") + " " * 2_000)
    assert "larger than 1,000 bytes" in error.message


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (group("{}").encode("utf-16"), "not UTF-8"),
        (group('{"a.b": {"type": "string", "enum": ["caf\xe9"]}}').encode("latin-1"), "not UTF-8"),
        (b"\xef\xbb\xbf" + group("{}").encode(), "byte order mark"),
    ],
)
def test_other_encodings_are_refused_with_a_hint(tmp_path: Path, data: bytes, why: str) -> None:
    error = refused(tmp_path, data)
    assert why in error.message and "UTF-8" in error.message


def test_a_lone_surrogate_is_refused(tmp_path: Path) -> None:
    key = '{"type": "string", "enum": ["\\ud800"], "x-memkg": {"kind": "preference"}}'
    error = refused(tmp_path, group('{"a.b": ' + key + "}"))
    assert "surrogate" in error.message


def test_a_syntax_error_names_its_line(tmp_path: Path) -> None:
    error = refused(tmp_path, '{\n"x-memkg": {"version": 1},\n"properties": {,}\n}')
    assert error.message.startswith(f"{FILE}:3: ")


@pytest.mark.parametrize("declared", ["1.0", "true", '"1"'])
def test_the_version_is_a_whole_number(tmp_path: Path, declared: str) -> None:
    error = refused(tmp_path, '{"x-memkg": {"version": ' + declared + '}, "properties": {}}',
                    "schema.version")  # fmt: skip
    assert "file name says @1" in error.message


def test_a_duplicate_key_another_object_also_holds_names_no_wrong_line() -> None:
    text = ('{\n "properties": {\n  "a": {"type": "string"},\n  "b": {"type": "string"},\n'
            '  "c": {"type": "string",\n        "type": "integer"}\n }\n}')  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        userschema.load_json(text, "x.json")
    assert caught.value.message.startswith("x.json: key 'type' appears twice")


def test_a_key_two_groups_declare_is_refused_naming_both_files(tmp_path: Path) -> None:
    # the later file used to win silently, its consent and type with it, by file-name order
    folder = tmp_path / "schemas" / "pets"
    folder.mkdir(parents=True)
    key = json.dumps(KEY)
    (folder / "pet@1.json").write_text(group('{"a.b": ' + key + ', "a.c": ' + key + "}"))
    (folder / "wishes@1.json").write_text(group('{"a.b": ' + key + "}"))
    with pytest.raises(ConfigError) as caught:
        SchemaRegistry(tmp_path / "schemas")
    assert caught.value.code == "schema.invalid"
    assert caught.value.message.startswith("schemas/pets/wishes@1.json: key 'a.b'")
    assert "schemas/pets/pet@1.json" in caught.value.message


def test_a_key_in_each_version_of_its_group_loads(tmp_path: Path) -> None:
    folder = tmp_path / "schemas" / "pets"
    folder.mkdir(parents=True)
    key = json.dumps(KEY)
    (folder / "pet@1.json").write_text(group('{"a.b": ' + key + "}"))
    (folder / "pet@2.json").write_text(
        group('{"a.b": ' + key + "}").replace('"version": 1', '"version": 2')
    )
    registry = SchemaRegistry(tmp_path / "schemas")
    assert [spec.version for spec in registry.history("pets", "a.b")] == [1, 2]
