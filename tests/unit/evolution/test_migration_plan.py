"""Migration plan files: what they may say, and errors that point at file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg.evolution.migration import MigrationError, load_plan, parse_plan
from memkg.evolution.outcome import plan_problems
from memkg.validate.registry import SchemaRegistry
from support.schema_roots import ROOT

HEAD = "migration: m\ndomain: health\nfrom: diet@1\nto: diet@2\n"


def test_the_shipped_plans_load_and_name_declared_keys() -> None:
    registry = SchemaRegistry(ROOT / "schemas")
    paths = sorted((ROOT / "schemas").glob("*/migrations/*.yaml"))
    assert paths
    for path in paths:
        plan = load_plan(path, ROOT)
        assert plan.file == path.relative_to(ROOT).as_posix()
        plan_problems(plan, registry.group(plan.domain, plan.group, plan.from_version),
                      registry.group(plan.domain, plan.to_group, plan.to_version))  # fmt: skip


def test_steps_of_every_kind() -> None:
    plan = parse_plan(HEAD + """steps:
  - {key: a.b, rename: a.c}
  - {key: a.d, drop: nobody reads it}
  - merge: [x.city, x.country]
    to: [{key: x.place, value: {object: {city: {copy: /x.city}}}}]
  - key: diet.restrictions
    to:
      - {key: diet.restrictions, value: {copy: ""}}
""", "p.yaml")  # fmt: skip
    kinds = [(s.kind, s.keys, s.line) for s in plan.steps]
    assert kinds == [
        ("transform", ("a.b",), 6),
        ("drop", ("a.d",), 7),
        ("merge", ("x.city", "x.country"), 8),
        ("transform", ("diet.restrictions",), 10),
    ]
    assert plan.steps[0].renames() == {"a.b": "a.c"}
    assert plan.steps[1].reason == "nobody reads it"
    assert plan.source_ref == "migration:m" and len(plan.digest) == 64


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("migration: m\ndomain: health\nfrom: diet@1\nto: diet@2\n", 1, "`steps` is missing"),
        (HEAD + "steps: []\n", 5, "steps is a non-empty list"),
        (HEAD.replace("diet@2", "diet@1") + "steps: [{key: a.b, drop: x}]\n", 4, "later version"),
        (
            HEAD.replace("from: diet@1", "from: diet") + "steps: [{key: a.b, drop: x}]\n",
            3,
            "GROUP@VERSION",
        ),
        (
            HEAD + "steps:\n  - key: a.b\n    to:\n      - key: a.c\n        value: {eval: x}\n",
            9,
            "unknown operator 'eval'",
        ),
        (
            HEAD + "steps:\n  - key: a.b\n    rename: a.c\n    drop: why\n",
            6,
            "exactly one of `to`, `rename`, `drop`",
        ),
        (
            HEAD + "steps:\n  - {key: a.b, drop: x}\n  - {key: a.b, rename: a.c}\n",
            7,
            "read by two steps (also line 6)",
        ),
        (HEAD + "steps:\n  - {key: a.b, drop: ''}\n", 6, "drop gives the reason"),
        (HEAD + "colour: red\nsteps: []\n", 5, "unknown fields ['colour']"),
        (HEAD + "steps: [\n", 6, "not valid YAML"),
    ],
)
def test_errors_name_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(MigrationError) as caught:
        parse_plan(text, "schemas/health/migrations/m.yaml")
    assert (caught.value.file, caught.value.line) == ("schemas/health/migrations/m.yaml", line)
    assert message in caught.value.message
    assert caught.value.message.startswith(f"schemas/health/migrations/m.yaml:{line}: ")
    assert caught.value.to_dict()["line"] == line


def test_keys_are_checked_against_both_versions(tmp_path: Path) -> None:
    registry = SchemaRegistry(ROOT / "schemas")
    old, new = registry.group("health", "diet", 1), registry.group("health", "diet", 2)
    plan = parse_plan(HEAD + "steps:\n  - {key: diet.restrictions, rename: diet.avoid}\n", "p.yaml")
    with pytest.raises(MigrationError, match=r"diet@2 declares no key diet\.avoid") as caught:
        plan_problems(plan, old, new)
    assert caught.value.line == 6
    with pytest.raises(MigrationError, match=r"cannot read"):
        load_plan(tmp_path / "missing.yaml")
