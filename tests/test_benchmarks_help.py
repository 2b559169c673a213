"""Every benchmark script explains itself on ``--help`` and runs nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if '__name__ == "__main__"' in p.read_text())


def test_there_are_scripts() -> None:
    assert {"run.py", "decision_bench.py", "ingest_bench.py"} <= {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_explains_and_runs_nothing(script: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--help"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")
    summary = script.read_text().split('"""')[1].splitlines()[0].strip()
    assert summary[:40] in " ".join(done.stdout.split())
    if script.name == "run.py" or script.stem.endswith("_bench"):
        assert "--quick" in done.stdout  # a short profile for a shared machine
        assert "--json" in done.stdout  # the figures for a machine to read
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written
