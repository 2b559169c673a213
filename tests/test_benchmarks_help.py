"""Every benchmark script answers --help with its usage instead of running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted(
    path
    for path in (Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py")
    if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8")
)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_usage_and_runs_nothing(script: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("usage:"), done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written: it did not run
