"""Migration plans and waivers refuse YAML bombs with file and line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memkg.cli import main
from memkg.evolution.migration import MigrationError, parse_plan
from memkg.evolution.waiver import load_waiver

BOMB = "migration: &a [*a]\n"


def test_a_plan_with_aliases_is_refused() -> None:
    with pytest.raises(MigrationError) as caught:
        parse_plan("domain: health\n" + BOMB, "schemas/health/migrations/m.yaml")
    assert (caught.value.file, caught.value.line) == ("schemas/health/migrations/m.yaml", 2)
    assert "anchors and aliases" in caught.value.message


def test_a_deeply_nested_plan_is_refused() -> None:
    with pytest.raises(MigrationError, match="levels deep"):
        parse_plan("steps: " + "[" * 5000 + "]" * 5000, "m.yaml")


def test_a_waiver_with_aliases_is_refused(tmp_path: Path) -> None:
    waiver = tmp_path / "w.yaml"
    waiver.write_text("waiver: m\nreason: &r [*r]\n")
    with pytest.raises(MigrationError, match="anchors and aliases") as caught:
        load_waiver(waiver)
    assert (caught.value.line, caught.value.code) == (2, "waiver.invalid")


def test_migrate_dry_run_on_a_bomb_is_a_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(BOMB)
    out = io.StringIO()
    code = main(
        ["--db", str(tmp_path / "m.db"), "schema", "migrate", str(plan), "--dry-run"], out=out
    )
    assert "Traceback" not in capsys.readouterr().err
    error = json.loads(out.getvalue())
    assert code == 1 and error["error"] == "migration.invalid" and error["line"] == 1
    assert "anchors and aliases" in error["message"]


@pytest.mark.parametrize("number", ["0x" + "f" * 4000, "0o" + "7" * 5000, str(2**63)])
def test_migrate_dry_run_on_an_integer_past_64_bits_is_a_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], number: str
) -> None:
    """PyYAML reads hex and octal with no digit limit: such a ``const`` was a traceback."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "migration: m\ndomain: health\nfrom: diet@1\nto: diet@2\nsteps:\n"
        f"  - key: diet.restrictions\n    to:\n      - key: diet.restrictions\n"
        f"        value: {{const: {number}}}\n"
    )
    out = io.StringIO()
    code = main(
        ["--db", str(tmp_path / "m.db"), "schema", "migrate", str(plan), "--dry-run"], out=out
    )
    assert "Traceback" not in capsys.readouterr().err
    error = json.loads(out.getvalue())
    assert code == 1 and error["error"] == "migration.invalid" and error["line"] == 9, error
    assert "2**63" in error["message"]
