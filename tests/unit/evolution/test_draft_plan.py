"""A plan file that does not load (a draft with a typo) stops only itself: writes, reads,
decisions and other plans go on, no read upcasts by it, ``rules lint`` warns about it with
its line, and running it says what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.cli import main
from memkg.evolution.migration import MigrationError
from support.observations import T0, obs
from support.schema_roots import project_copy

DRAFT = ("migration: draft\ndomain: travel\nfrom: flight@1\nto: flight@2\n"
         "steps:\n  - {key: seat.preference, renam: seat.best}\n")  # fmt: skip


def test_a_draft_plan_with_a_typo_stops_only_itself(tmp_path: Path) -> None:
    root = project_copy(tmp_path / "root")  # with the shipped health plan, which loads
    (root / "schemas/travel/migrations").mkdir()
    (root / "schemas/travel/migrations/draft.yaml").write_text(DRAFT, encoding="utf-8")
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    engine.ingest(obs(key="cabin.class", value="business"))
    stored = engine.ingest(obs(key="airline.preferred", value="airline:MU"))
    assert {f.id for f in engine.facts("u1")} >= {stored.fact_id}
    assert engine.decide("u1", "travel", {}).status is not None
    # the draft registers nothing and is named with its line
    [problem] = engine.setup.plan_problems
    assert problem.file.endswith("draft.yaml") and problem.line == 6
    with pytest.raises(MigrationError) as refused:
        engine.migration_dry_run("travel/draft")
    assert refused.value.line == 6 and "renam" in refused.value.message
    report = engine.migration_dry_run("health/diet_organ_meat")  # another plan runs
    assert report.verdict in {"PASS", "WARN"}


def test_rules_lint_warns_about_the_draft_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project_copy(tmp_path / "root")
    (root / "schemas/travel/migrations").mkdir()
    (root / "schemas/travel/migrations/draft.yaml").write_text(DRAFT, encoding="utf-8")
    code = main(["--root", str(root), "rules", "lint"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "draft.yaml" in out and "warning" in out and "no read upcasts" in out


def test_schema_history_lists_the_draft_with_what_is_wrong(tmp_path: Path) -> None:
    root = project_copy(tmp_path / "root")
    (root / "schemas/travel/migrations").mkdir()
    (root / "schemas/travel/migrations/draft.yaml").write_text(DRAFT, encoding="utf-8")
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    [listed] = engine.schema_history("travel")["migrations"]
    assert listed["file"].endswith("draft.yaml") and listed["line"] == 6
    assert listed["error"] == "migration.invalid" and "renam" in listed["message"]
    assert engine.schema_history("health")["migrations"][0]["migration"] == "diet_organ_meat"
