"""SIGKILL a worker at random points; nothing acknowledged is lost, nothing is stored twice.

``MEMKG_KILLS`` sets the kills per backend (``make soak``: 600 each); ``MEMKG_SEED`` the seed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.crash import CrashHarness
from support.figures import record

KILLS = int(os.environ.get("MEMKG_KILLS", "0")) or None
SEED = int(os.environ.get("MEMKG_SEED", "1807"))


def test_sqlite_survives_kills(tmp_path: Path) -> None:
    spec = {"backend": "sqlite", "where": str(tmp_path / "memkg.db")}
    kills = KILLS or 30
    report = CrashHarness(spec, SEED, tmp_path, count=kills * 40 + 200).run(kills)
    record(report.line(), kills=report.kills, operations=report.operations)
    assert report.problems == [], f"seed {SEED}: {report.problems[:5]}"
    assert report.kills == kills and report.operations > kills
    assert report.replayed > 0 and report.retried > 0


@pytest.mark.postgres
def test_postgres_survives_kills(tmp_path: Path, postgres_dsn: str, pg_schema: str) -> None:
    spec = {"backend": "postgres", "where": postgres_dsn, "schema": pg_schema}
    kills = KILLS or 20
    report = CrashHarness(spec, SEED + 1, tmp_path, count=kills * 40 + 200).run(kills)
    record(report.line(), kills=report.kills, operations=report.operations)
    assert report.problems == [], f"seed {SEED + 1}: {report.problems[:5]}"
    assert report.kills == kills and report.operations > kills


def test_the_harness_catches_a_store_that_acknowledges_before_commit(tmp_path: Path) -> None:
    spec = {"backend": "sqlite", "where": str(tmp_path / "memkg.db"), "store": "ack_early"}
    report = CrashHarness(spec, SEED, tmp_path, count=2000).run(30)
    assert any("acknowledged but" in p for p in report.problems), report.line()
