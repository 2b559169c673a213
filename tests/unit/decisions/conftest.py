"""Fixtures for the decision log tests: one log per adapter, and an engine that writes to it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.decisions import DecisionLog, MemoryDecisionLog, PostgresDecisionLog, SqliteDecisionLog

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DecisionLog]:
    made: DecisionLog
    if request.param == "memory":
        made = MemoryDecisionLog()
    elif request.param == "sqlite":
        made = SqliteDecisionLog(tmp_path / "d.db")
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        made = PostgresDecisionLog(dsn, schema=request.getfixturevalue("pg_schema"))
    yield made
    made.close()


@pytest.fixture
def logged_engine(log: DecisionLog) -> Engine:
    """An in-memory engine whose decisions go to ``log``."""
    return Engine(clock=FrozenClock(NOW), config=EngineConfig(shacl=False), decision_log=log)
