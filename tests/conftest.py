"""Fixtures shared by every test: a frozen clock, engines over each store, a PostgreSQL schema."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from memkg import Engine, FrozenClock
from support.observations import T0

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"

# ``make test`` draws the same examples on every run (``derandomize``), so a run passes or
# fails on the code alone; ``make check`` sets MEMKG_HYPOTHESIS_PROFILE=long: property tests
# run many more examples, drawn afresh each time, to find what the fixed ones miss (a case
# found there is then pinned with ``@example``). ``tests/property/test_memory_machine.py``
# reads the same name for its own budget.
settings.register_profile("default", derandomize=True)
settings.register_profile("long", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("MEMKG_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0)


@pytest.fixture
def engine(clock: FrozenClock) -> Engine:
    return Engine(clock=clock)


@pytest.fixture
def sqlite_engine(tmp_path: Path, clock: FrozenClock) -> Iterator[Engine]:
    with Engine.open(tmp_path / "memkg.db", clock=clock) as engine:
        yield engine


@pytest.fixture(scope="session")
def postgres_dsn() -> str:
    """The test server's DSN; skips when it does not answer, fails instead when ``CI`` is set."""
    try:
        import psycopg

        with psycopg.connect(PG_DSN, connect_timeout=3):
            pass
    except Exception as exc:
        message = f"PostgreSQL at {PG_DSN} did not answer: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return PG_DSN


@pytest.fixture
def pg_schema(postgres_dsn: str) -> Iterator[str]:
    """A fresh schema name, dropped with everything in it afterwards."""
    import psycopg

    schema = f"memkg_test_{secrets.token_hex(6)}"
    yield schema
    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The durability battery's figures (kills, operations, faults, residue bytes), if it ran."""
    from support.figures import LINES, TOTALS

    if not LINES:
        return
    terminalreporter.section("durability figures")
    for line in LINES:
        terminalreporter.write_line(line)
    totals = ", ".join(f"{name} {count}" for name, count in sorted(TOTALS.items()))
    terminalreporter.write_line(f"total: {totals}")
