"""Fixtures for the graph tests: an in-memory engine on a frozen clock, and a way to feed it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from memkg.clock import FrozenClock
from memkg.config import EngineConfig
from memkg.engine import Engine, IngestResult

START = datetime(2026, 5, 1, 9, tzinfo=UTC)

Observe = Callable[..., IngestResult]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


@pytest.fixture
def engine(clock: FrozenClock) -> Engine:
    # SHACL runs in tests/unit/validate; here it would only cost time
    return Engine(clock=clock, config=EngineConfig(shacl=False))


@pytest.fixture
def observe(engine: Engine) -> Observe:
    def ingest(user: str, domain: str, key: str, value: Any, **fields: Any) -> IngestResult:
        fields.setdefault("source", "dialogue")
        fields.setdefault("confidence", 0.9)
        return engine.ingest({"user_id": user, "domain": domain, "key": key, "value": value,
                              **fields})  # fmt: skip

    return ingest
