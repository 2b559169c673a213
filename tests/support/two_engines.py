"""Two engines on one store (a SQLite file, a PostgreSQL schema), as two processes would be,
with ids of their own (``FrozenClock`` seeds), for tests of what one sees of the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from support.observations import T0


def two_engines(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Engine, Engine]:
    """Engines A and B on the store ``request.param`` names (``sqlite`` or ``postgres``)."""
    if request.param == "postgres":
        dsn, schema = request.getfixturevalue("postgres_dsn"), request.getfixturevalue("pg_schema")
        config = EngineConfig(pg_schema=schema)
        return (Engine.connect(dsn, clock=FrozenClock(T0), config=config),
                Engine.connect(dsn, clock=FrozenClock(T0, seed=1), config=config))  # fmt: skip
    return (Engine.open(tmp_path / "memkg.db", clock=FrozenClock(T0)),
            Engine.open(tmp_path / "memkg.db", clock=FrozenClock(T0, seed=1)))  # fmt: skip
