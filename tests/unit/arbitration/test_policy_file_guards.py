"""policy.yaml, questions.yaml and defaults.yaml go through memkg's guarded YAML loader, and a
question template is filled, never formatted: what could cost memory or reveal internals is
refused at load, naming file and line."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path

import pytest

from memkg.arbitration import QuestionBook, RoleDefaults, load_policy
from memkg.arbitration.policy import PolicyFileError
from memkg.cli import main
from memkg.errors import ConfigError
from memkg.roots import builtin
from memkg.validate.registry import SchemaRegistry
from memkg.yamlfile import YamlError

ROOT = builtin("examples")
BOMB = (
    "[&a0 [x, x, x, x, x, x, x, x, x], "
    + ", ".join(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9))
    + "]"
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "travel" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _load(tmp_path: Path, name: str) -> object:
    if name == "policy.yaml":
        return load_policy(tmp_path / "travel" / name)
    if name == "questions.yaml":
        return QuestionBook.load(tmp_path)
    return RoleDefaults.load(tmp_path, SchemaRegistry(ROOT / "schemas").spec)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("defaults.yaml", "defaults:\n  seat.preference: " + BOMB + "\n"),
        ("questions.yaml", "seat.preference:\n  conflict: {en: x, when: {value: " + BOMB + "}}\n"),
        ("policy.yaml", "version: 1\nstaleness_days: " + BOMB + "\n"),
    ],
)
def test_an_alias_bomb_is_refused_at_once(tmp_path: Path, name: str, text: str) -> None:
    path = _write(tmp_path, name, text)
    started = time.process_time()
    with pytest.raises(YamlError) as caught:
        _load(tmp_path, name)
    assert time.process_time() - started < 1
    error = caught.value
    assert (error.code, error.file, error.line) == ("rules.yaml_alias", str(path), 2)
    assert error.message.startswith(f"{path}:2: anchors and aliases")


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("defaults.yaml", "defaults:\n  seat.preference: !!python/name:os.system\n", 2),
        ("policy.yaml", "version: " + "1" * 5000 + "\n", 1),
        ("questions.yaml", "seat.preference:\n  conflict: {en: 'x', when: {value: .nan}}\n", 2),
    ],
)
def test_the_guarded_loader_refuses_what_it_refuses_elsewhere(
    tmp_path: Path, name: str, text: str, line: int
) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(YamlError) as caught:
        _load(tmp_path, name)
    assert (caught.value.file, caught.value.line) == (str(path), line)


@pytest.mark.parametrize(
    "template",
    [
        "{value:>2000000000}",
        "{value!r}",
        "{key.__class__.__mro__}",
        "{value.__class__}",
        "{other[0]}",
        "{key.name}",
        "{value[category][__init__]}",
        "{}",
        "{0}",
        "a { b",
        "a } b",
        "{{literal}}",
    ],
)
def test_a_template_that_is_not_plain_placeholders_is_refused(
    tmp_path: Path, template: str
) -> None:
    text = "seat.preference:\n  stale: {en: 'ok {value}'}\n  conflict:\n    - en: '%s'\n"
    path = _write(tmp_path, "questions.yaml", text % template.replace("'", "''"))
    with pytest.raises(PolicyFileError) as caught:
        QuestionBook.load(tmp_path)
    error = caught.value
    assert isinstance(error, ConfigError) and error.code == "questions.invalid"
    assert (error.file, error.line) == (str(path), 4)
    assert error.message.startswith(f"{path}:4: seat.preference.conflict[0].en: ")
    assert "{value}, {other}, {key}" in error.message and "{other.field}" in error.message


@pytest.mark.parametrize("text", ["5", "[a]", "null", "{x: 1}"])
def test_a_template_that_is_not_text_is_refused(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, "questions.yaml", f"seat.preference:\n  conflict:\n    en: {text}\n")
    with pytest.raises(PolicyFileError) as caught:
        QuestionBook.load(tmp_path)
    assert (caught.value.code, caught.value.line) == ("questions.invalid", 3)
    assert f"{path}:3: seat.preference.conflict.en: " in caught.value.message
    assert "must be text" in caught.value.message


def test_object_fields_fill_by_lookup_only(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "questions.yaml",
        "purchase.intent:\n  conflict:\n"
        "    - when: {other: {buying: false}}\n      en: 'Not {other[category]}, {other.note}?'\n"
        "    - en: 'Still {value.category} rather than {other.category}?'\n",
    )
    book = QuestionBook.load(tmp_path)
    no = {"category": "category:phone", "buying": False}
    asked = book.render("travel", "purchase.intent", "conflict", "en", value=no, other=no,
                        labels={("category:phone", "en"): "a phone"})  # fmt: skip
    assert asked.text == "Not a phone, (no other.note given)?"
    # a field of a value that is not an object reads as not given, never as a crash
    asked = book.render("travel", "purchase.intent", "conflict", "en", value="x", other=None)
    assert asked.text == "Still (no value.category given) rather than (no other.category given)?"


def test_a_huge_value_renders_as_itself(tmp_path: Path) -> None:
    _write(tmp_path, "questions.yaml", "seat.preference:\n  confirm: {en: 'Is it {value}?'}\n")
    asked = QuestionBook.load(tmp_path).render(
        "travel", "seat.preference", "confirm", "en", value="aisle"
    )
    assert asked.text == "Is it aisle?"


def test_policy_errors_name_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "policy.yaml", "version: 1\nbands:\n  freeze_above: 2\n")
    with pytest.raises(PolicyFileError) as caught:
        load_policy(path)
    assert caught.value.code == "policy.invalid" and caught.value.line == 3
    assert caught.value.message.startswith(f"{path}:3: bands.freeze_above: ")


def test_a_default_error_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "defaults.yaml", "defaults:\n  a.b: 1\n  seat.preference: hammock\n")
    with pytest.raises(PolicyFileError) as caught:
        _load(tmp_path, "defaults.yaml")
    assert (caught.value.code, caught.value.line) == ("defaults.invalid", 2)
    assert caught.value.message.startswith(f"{path}:2: defaults.a.b: ")


def _lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict]:
    out = io.StringIO()
    code = main(["--root", str(root), "--db", str(tmp_path / "m.db"), "rules", "lint"], out=out)
    assert "Traceback" not in capsys.readouterr().err
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize(
    ("name", "text", "code", "line"),
    [
        ("questions.yaml", "seat.preference:\n  conflict: {en: 5}\n", "questions.invalid", 2),
        ("questions.yaml", "seat.preference:\n  conflict: {en: '{value:>9}'}\n",
         "questions.invalid", 2),
        ("defaults.yaml", "defaults:\n  seat.preference: hammock\n", "defaults.invalid", 2),
        ("defaults.yaml", "defaults: [\n", "rules.yaml", 2),
    ],
)  # fmt: skip
def test_rules_lint_reports_the_arbitration_files(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    text: str,
    code: str,
    line: int,
) -> None:
    root = tmp_path / "root"
    for folder in ("rules", "schemas"):
        shutil.copytree(ROOT / folder / "travel", root / folder / "travel")
    status, clean = _lint(tmp_path, capsys, root)
    assert (status, clean["ok"]) == (0, True)
    path = root / "rules" / "travel" / name
    path.write_text(text, encoding="utf-8")
    status, out = _lint(tmp_path, capsys, root)
    assert status == 1 and out["ok"] is False
    [found] = [f for f in out["findings"] if f["file"] == str(path)]
    assert (found["code"], found["line"]) == (code, line)
