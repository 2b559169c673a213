"""The append-only event log: ports and adapters."""

from memkg.events.store import AppendResult, ErasureCounts, EventStore

__all__ = ["AppendResult", "ErasureCounts", "EventStore"]
