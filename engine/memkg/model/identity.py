"""Who a memory belongs to: the user's memory switch, and ids merged into one person."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class SwitchMode(StrEnum):
    """What turning memory off does to what is stored."""

    KEEP = "keep"
    """Memory is frozen: kept as it is, unread and unwritten until memory is on again."""
    ERASE = "erase"
    """Memory is erased; the stream keeps only the switch event (no personal data)."""


class MemoryState(BaseModel):
    """Whether memory is on for a user, and since when (``seq`` 0: never switched)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    enabled: bool
    mode: SwitchMode | None = None
    """How memory was turned off (``None`` while it is on)."""
    by: str | None = None
    since: datetime | None = None
    seq: int = 0


class MergeStatus(StrEnum):
    PROPOSED = "proposed"
    """Waiting for the explicit confirmation: nothing is joined yet."""
    MERGED = "merged"
    SPLIT = "split"


class Merge(BaseModel):
    """A link between two ids of one person: ``other``'s memory is read with ``primary``'s."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    merge_id: str
    primary: str
    other: str
    status: MergeStatus
    by: str
    reason: str
    at: datetime
