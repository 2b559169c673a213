"""Fixtures shared by every test: a frozen clock and engines over each store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock
from support.observations import T0


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
