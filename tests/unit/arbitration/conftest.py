"""Fixtures for the arbitration tests: an engine on a frozen clock, and observation helpers."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memkg.clock import FrozenClock
from memkg.engine import Engine, IngestResult

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)

Ingest = Callable[..., IngestResult]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def engine(clock: FrozenClock) -> Engine:
    return Engine(clock=clock)


@pytest.fixture
def ingest(engine: Engine, clock: FrozenClock) -> Ingest:
    """``ingest(key, value, source, confidence=1.0, ago=timedelta(0), **fields)``."""

    def write(
        key: str,
        value: Any,
        source: str,
        confidence: float = 1.0,
        *,
        domain: str = "travel",
        user: str = "u1",
        ago: timedelta = timedelta(0),
        **fields: Any,
    ) -> IngestResult:
        observation = {
            "user_id": user,
            "domain": domain,
            "key": key,
            "value": value,
            "source": source,
            "confidence": confidence,
            "observed_at": (clock.now() - ago).isoformat(),
            **fields,
        }
        return engine.ingest(observation)

    return write
