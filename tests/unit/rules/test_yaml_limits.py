"""Rule, plan and waiver YAML: what makes a small file costly or unsafe is refused, with a line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memkg import yamlfile as source
from memkg.errors import ConfigError, MemkgError
from memkg.rules.cases import load_cases
from memkg.rules.loader import load_bundle, read_sources
from memkg.rules.spec import RuleBundle
from memkg.yamlfile import MAX_DEPTH, YamlError, load_file, load_text


def refused(text: str, code: str) -> YamlError:
    with pytest.raises(YamlError) as caught:
        load_text(text, "rules/health/t.yaml")
    assert caught.value.code == code and isinstance(caught.value, MemkgError)
    assert caught.value.message.startswith(f"rules/health/t.yaml:{caught.value.line}: ")
    assert caught.value.file == "rules/health/t.yaml"
    return caught.value


def test_a_self_referencing_alias_is_refused() -> None:
    error = refused("x: 1\na: &a [*a]\n", "rules.yaml_alias")
    assert error.line == 2 and "write the value out in full" in error.message


def test_billion_laughs_is_refused() -> None:
    # 10**4 values from 5 short lines; each further line would multiply them by 10
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(3)
    )
    assert refused(text, "rules.yaml_alias").line == 1


def test_an_anchor_alone_and_a_merge_key_are_refused() -> None:
    assert refused("a: 1\nb: &b {c: 1}\n", "rules.yaml_alias").line == 2
    assert "merge keys" in refused("a: 1\n<<: {c: 1}\n", "rules.yaml_alias").message


@pytest.mark.parametrize(
    "text", ["[" * 5000 + "]" * 5000, "a: " + "{b: " * 5000 + "1" + "}" * 5000]
)
def test_deep_nesting_is_refused(text: str) -> None:
    error = refused(text, "rules.yaml_depth")
    assert f"more than {MAX_DEPTH} levels" in error.message and "flatten" in error.message


def test_nesting_up_to_the_limit_loads() -> None:
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_text(deepest, "t.yaml").data is not None
    refused("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "rules.yaml_depth")


def test_too_many_values_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "MAX_NODES", 100)
    assert len(load_text("a:\n" + "- 1\n" * 97, "t.yaml").data["a"]) == 97  # 100 with a, [...]
    error = refused("a:\n" + "- 1\n" * 98, "rules.yaml_size")
    assert error.line == 99 and "split it" in error.message


def test_a_recursion_error_becomes_a_yaml_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "MAX_DEPTH", 10**6)
    depth = sys.getrecursionlimit() + 100
    refused("[" * depth + "]" * depth, "rules.yaml_depth")


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object/apply:os.system ['echo PWNED']\n",
        "a: !!python/name:os.system\n",
        "a: !!python/object/new:builtins.dict {}\n",
        "a: !!binary aGVsbG8=\n",
    ],
)
def test_tags_outside_the_core_schema_are_refused(text: str) -> None:
    assert "remove the tag" in refused(text, "rules.yaml_tag").message


def test_core_tags_and_plain_values_load() -> None:
    doc = load_text("a: !!str 22\nb: [1, 2.5, null, true, 22:00]\n", "t.yaml")
    assert doc.data == {"a": "22", "b": [1, 2.5, None, True, "22:00"]}


def test_a_list_as_key_is_refused() -> None:
    assert "keys are plain text" in refused("? [a]\n: 1\n", "rules.yaml").message


def test_a_file_not_in_utf8_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "health").mkdir()
    (tmp_path / "health" / "t.yaml").write_bytes(b"a: 1\nb: \xff\xfe\n")
    with pytest.raises(YamlError) as caught:
        read_sources(tmp_path)
    error = caught.value
    assert isinstance(error, ConfigError) and error.code == "rules.encoding"
    assert (error.file, error.line) == ("rules/health/t.yaml", 2)
    assert "not UTF-8" in error.message and "save the file as UTF-8" in error.message
    with pytest.raises(YamlError, match="not UTF-8"):
        load_file(tmp_path / "health" / "t.yaml", tmp_path)


def test_a_cases_file_not_in_utf8_is_a_finding(tmp_path: Path) -> None:
    bundle, _ = load_bundle(
        {
            "health/domain.yaml": "actions: {go: {description: go}}\n",
            "health/t.yaml": "hit_policy: first\nallow_no_match: true\nrules: []\n",
        }
    )
    assert isinstance(bundle, RuleBundle) and ("health", "t") in bundle.tables
    (tmp_path / "health").mkdir()
    (tmp_path / "health" / "t.cases.yaml").write_bytes(b"\xffcases: []\n")
    cases, findings = load_cases(tmp_path, bundle)
    assert cases == [] and [(f.code, f.file, f.line) for f in findings] == [
        ("cases.yaml", "rules/health/t.cases.yaml", 1)
    ]


@pytest.mark.parametrize("now", ["0Z", "2026-13-01T09:00:00Z", "tomorrow+01:00"])
def test_a_case_whose_now_is_no_time_is_a_finding(tmp_path: Path, now: str) -> None:
    bundle, _ = load_bundle(
        {
            "health/domain.yaml": "actions: {go: {description: go}}\n",
            "health/t.yaml": "hit_policy: first\nallow_no_match: true\nrules: []\n",
        }
    )
    assert isinstance(bundle, RuleBundle)
    (tmp_path / "health").mkdir()
    (tmp_path / "health" / "t.cases.yaml").write_text(
        "cases:\n"
        "  - name: fine\n    now: '2026-05-01T09:00:00Z'\n    expect: {status: no_match}\n"
        f"  - name: odd\n    now: '{now}'\n    expect: {{status: no_match}}\n"
    )
    cases, findings = load_cases(tmp_path, bundle)
    assert [c.name for c in cases] == ["fine"]
    assert [(f.code, f.file, f.line) for f in findings] == [
        ("cases.now", "rules/health/t.cases.yaml", 6)
    ]
    assert repr(now) in findings[0].message and "ISO 8601" in findings[0].message
