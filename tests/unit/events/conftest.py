"""Fixtures for the event store tests: one store per adapter, and events to put in it."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg.events.memory import MemoryEventStore
from memkg.events.postgres import PostgresEventStore
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import EventStore
from memkg.model.event import EventType, NewEvent

MakeEvent = Callable[..., NewEvent]


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    adapter: EventStore
    if request.param == "memory":
        adapter = MemoryEventStore()
    elif request.param == "sqlite":
        adapter = SqliteEventStore(tmp_path / "events.db")
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        adapter = PostgresEventStore(dsn, schema=request.getfixturevalue("pg_schema"))
    yield adapter
    adapter.close()


@pytest.fixture
def make_event() -> MakeEvent:
    """A factory of valid events with unique ids and increasing times."""
    counter = itertools.count(1)
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def make(
        user_id: str = "alice",
        *,
        value: Any = "tea",
        fact_id: str | None = None,
        audit_log_id: str | None = None,
        event_type: EventType = EventType.FACT_ASSERTED,
    ) -> NewEvent:
        n = next(counter)
        return NewEvent(
            event_id=f"evt_{n:06d}",
            type=event_type,
            user_id=user_id,
            domain="travel",
            payload={"key": "drink", "value": value, "n": n},
            recorded_at=start + timedelta(seconds=n, microseconds=n),
            fact_id=fact_id,
            audit_log_id=audit_log_id,
        )

    return make
