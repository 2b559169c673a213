"""Rule-file JSON Schemas come from the configured root (default: the one memkg ships)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memkg.errors import ConfigError
from memkg.roots import builtin
from memkg.rules.cases import load_cases
from memkg.rules.loader import load_bundle

SOURCES = {
    "health/domain.yaml": "actions: {go: {description: go}}\n",
    "health/t.yaml": "hit_policy: first\nallow_no_match: true\nrules: []\n",
}


def root_with(tmp_path: Path, name: str, schema: dict[str, object]) -> Path:
    shutil.copytree(builtin("core") / "schemas" / "rules", tmp_path / "schemas" / "rules")
    (tmp_path / "schemas" / "rules" / f"{name}.schema.json").write_text(json.dumps(schema))
    return tmp_path


def test_the_default_is_the_shipped_schemas() -> None:
    bundle, findings = load_bundle(SOURCES)
    assert findings == [] and ("health", "t") in bundle.tables


def test_rule_files_are_checked_against_the_configured_root(tmp_path: Path) -> None:
    root = root_with(tmp_path, "rule-file", {"required": ["owner"]})
    bundle, findings = load_bundle(SOURCES, root=root)
    assert [(f.code, f.file) for f in findings] == [("rule.schema", "rules/health/t.yaml")]
    assert "'owner' is a required property" in findings[0].message
    assert ("health", "t") not in bundle.tables


def test_cases_files_are_checked_against_the_configured_root(tmp_path: Path) -> None:
    root = root_with(tmp_path / "root", "cases-file", {"required": ["owner"]})
    bundle, _ = load_bundle(SOURCES)
    rules = tmp_path / "rules"
    (rules / "health").mkdir(parents=True)
    (rules / "health" / "t.cases.yaml").write_text("cases: []\n")
    owner = "(top level): 'owner' is a required property"
    assert owner not in [f.message for f in load_cases(rules, bundle)[1]]
    assert owner in [f.message for f in load_cases(rules, bundle, root)[1]]


def test_a_root_without_rule_schemas_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="schemas/rules/") as caught:
        load_bundle(SOURCES, root=tmp_path)
    assert caught.value.code == "rules.schema_missing"
    assert str(tmp_path / "schemas" / "rules" / "domain-file.schema.json") in caught.value.message
