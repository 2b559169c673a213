"""The in-memory twin: thread safety, and events rebuilt from rows behave like validated ones."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from memkg.errors import ConcurrencyConflict
from memkg.events.memory import MemoryEventStore, stored_event
from memkg.model.event import Event, EventType

MakeEvent = Any


def test_threads_appending_with_retries_lose_nothing(make_event: MakeEvent) -> None:
    store = MemoryEventStore()
    events = [[make_event() for _ in range(200)] for _ in range(4)]

    def write(mine: list[Any]) -> None:
        for event in mine:
            while True:
                try:
                    store.append("alice", [event], expected_version=store.stream_version("alice"))
                    break
                except ConcurrencyConflict:
                    continue

    threads = [threading.Thread(target=write, args=(mine,)) for mine in events]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert [e.version for e in store.read_stream("alice")] == list(range(1, 801))


def test_stored_event_equals_a_validated_event() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    fields: dict[str, Any] = {
        "event_id": "evt_1", "type": EventType.FACT_CONFIRMED, "user_id": "alice",
        "domain": None, "payload": {"a": [1]}, "recorded_at": at, "fact_id": "f1",
        "audit_log_id": None, "seq": 7, "version": 2,
    }  # fmt: skip
    validated = Event(**fields)

    rebuilt = stored_event(
        7, "evt_1", "alice", 2, "fact.confirmed", None, "f1", None, {"a": [1]}, at
    )

    assert rebuilt == validated and validated == rebuilt
    assert rebuilt.model_dump() == validated.model_dump()
    assert rebuilt.model_fields_set == validated.model_fields_set
    assert rebuilt.model_copy(update={"seq": 8}).seq == 8
    assert repr(rebuilt) == repr(validated)
    with pytest.raises(ValidationError):
        rebuilt.seq = 9  # type: ignore[misc]
