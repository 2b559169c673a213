"""Events: the append-only log is memory's single source of truth."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict


class EventType(StrEnum):
    FACT_ASSERTED = "fact.asserted"
    FACT_CONFIRMED = "fact.confirmed"
    FACT_SUPERSEDED = "fact.superseded"
    FACT_RETRACTED = "fact.retracted"
    FACT_EXPIRED = "fact.expired"
    SIGNAL_RECORDED = "signal.recorded"
    SUBJECT_ERASED = "subject.erased"
    NOTE_SAVED = "note.saved"
    NOTE_MERGED = "note.merged"
    NOTE_DROPPED = "note.dropped"
    SESSION_CONSOLIDATED = "session.consolidated"
    KEY_FROZEN = "key.frozen"
    """A strong conflict froze a key; it waits on the review queue."""
    REVIEW_RESOLVED = "review.resolved"
    """A reviewer settled a frozen key (value, note, reviewer): the key is usable again."""
    MEMORY_DISABLED = "memory.disabled"
    """The person turned memory off (``mode``: ``keep`` freezes memory, ``erase`` erased it)."""
    MEMORY_ENABLED = "memory.enabled"
    """The person turned memory back on."""
    MERGE_PROPOSED = "identity.merge_proposed"
    """Two ids may be one person: pending until ``merge_users`` is called with its id."""
    USERS_MERGED = "identity.merged"
    """Two ids are one person (in both streams): reads of either join their memories."""
    USERS_SPLIT = "identity.split"
    """A merge was undone (in both streams): the two memories are separate again."""


class NewEvent(BaseModel):
    """An event about to be appended; the store assigns its position."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: str
    type: EventType
    user_id: str
    domain: str | None
    payload: dict[str, Any]
    recorded_at: datetime
    fact_id: str | None = None
    """The fact this event is about, if any (indexed: erasure by fact and audit id)."""
    audit_log_id: str | None = None
    """The provenance audit id of that fact, if any."""


class Event(NewEvent):
    """A stored event: ``seq`` is its global log position, ``version`` its place in the stream."""

    seq: int
    version: int


StoredRow = tuple[Any, ...]
"""An event as a store keeps it: ``(seq, event_id, user_id, version, type, domain, fact_id,
audit_log_id, payload, recorded_at)``, the type by its value, the payload as JSON text and
``recorded_at`` as ISO text in UTC. A fold reads what it needs of a row (its payload, its
time) without building the ``Event`` (``events.store.RowStream``)."""


def row_payload(row: StoredRow) -> dict[str, Any]:
    """A stored row's payload."""
    payload: dict[str, Any] = orjson.loads(row[8])
    return payload


def row_time(row: StoredRow) -> datetime:
    """A stored row's ``recorded_at``."""
    return datetime.fromisoformat(row[9])
