"""Released schema and shape versions are immutable: a change is a new version."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg.evolution.history import read_manifest, release_problems
from memkg.roots import builtin
from support.schema_roots import ROOT, project_copy


@pytest.mark.parametrize("name", ["core", "examples"])
def test_no_released_file_has_changed(name: str) -> None:
    problems = release_problems(builtin(name))
    assert problems == [], (
        "released files changed or are missing from schemas/RELEASED.json. A released version "
        "never changes: add schemas/<domain>/<group>@<n+1>.json (or raise the shape's "
        "owl:versionInfo) and record its sha256 in schemas/RELEASED.json:\n" + "\n".join(problems)
    )


def test_every_group_file_and_shape_is_released() -> None:
    released = read_manifest(ROOT / "schemas")
    assert "schemas/health/diet@1.json" in released
    assert any(name.startswith("ontology/shapes/keys.ttl@") for name in released)
    core = read_manifest(builtin("core") / "schemas")
    assert any(name.startswith("ontology/shapes/fact.ttl@") for name in core)


def test_an_edited_release_is_caught_and_a_new_version_is_not(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    v1 = root / "schemas/health/diet@1.json"
    v1.write_text(v1.read_text(encoding="utf-8").replace('"halal",', '"halal", "pescatarian",'),
                  encoding="utf-8")  # fmt: skip
    [problem] = release_problems(root)
    assert problem.startswith("schemas/health/diet@1.json: released with sha256")
    v1.write_text((ROOT / "schemas/health/diet@1.json").read_text(encoding="utf-8"),
                  encoding="utf-8")  # fmt: skip
    (root / "schemas/health/diet@3.json").write_text("{}", encoding="utf-8")
    assert release_problems(root) == []  # the newest version may stay unreleased while drafted
    shapes = root / "ontology/shapes/keys.ttl"
    shapes.write_text(shapes.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert [p.split(":")[0] for p in release_problems(root)] == ["ontology/shapes/keys.ttl@1"]
    shapes.write_text(shapes.read_text(encoding="utf-8").replace(
        'owl:versionInfo "1"', 'owl:versionInfo "2"'), encoding="utf-8")  # fmt: skip
    [problem] = release_problems(root)
    assert problem.startswith("ontology/shapes/keys.ttl@2: shape version not released")
    (root / "schemas/health/diet@2.json").unlink()
    assert any("diet@2.json: released but missing" in p for p in release_problems(root))
