"""The ``TraceStore`` port and its in-memory twin.

Contract: ``put`` stores a trace once (a second put of the same id is refused); ``get``
returns it as stored, or raises ``NotFound``; ``expire`` removes the traces created before a
time; ``erase_user`` removes every trace about a user; ``erase_citing`` removes a user's
traces that name any of a set of fact ids (erasure by audit id), matching the record's text
as the decision log does.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from memkg.errors import InvalidOperation, NotFound
from memkg.model.trace import Trace


@runtime_checkable
class TraceStore(Protocol):
    def put(self, trace: Trace) -> None: ...

    def get(self, trace_id: str) -> Trace: ...

    def expire(self, before: datetime) -> int:
        """Remove the traces created before ``before``; return how many."""
        ...

    def erase_user(self, user_id: str) -> int: ...

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int: ...

    def files(self) -> list[Path]: ...

    def close(self) -> None: ...


def not_found(trace_id: str) -> NotFound:
    return NotFound(
        f"no trace {trace_id} (never made, past its retention, or its user was erased)",
        code="trace.not_found",
    )


def duplicate(trace_id: str) -> InvalidOperation:
    return InvalidOperation(f"trace {trace_id} is already stored", code="trace.duplicate")


def needles(fact_ids: Collection[str]) -> list[str]:
    """The ids to look for; an empty id would match every record."""
    return sorted({f for f in fact_ids if f})


class MemoryTraceStore:
    """Traces in a dict: for tests and the in-memory engine."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._traces: dict[str, tuple[str, datetime, str]] = {}

    def put(self, trace: Trace) -> None:
        with self._lock:
            if trace.trace_id in self._traces:
                raise duplicate(trace.trace_id)
            self._traces[trace.trace_id] = (
                trace.user_id,
                trace.created_at,
                trace.model_dump_json(),
            )

    def get(self, trace_id: str) -> Trace:
        found = self._traces.get(trace_id)
        if found is None:
            raise not_found(trace_id)
        return Trace.model_validate_json(found[2])

    def expire(self, before: datetime) -> int:
        with self._lock:
            old = [i for i, (_, at, _) in self._traces.items() if at < before]
            for trace_id in old:
                del self._traces[trace_id]
            return len(old)

    def erase_user(self, user_id: str) -> int:
        with self._lock:
            mine = [i for i, (user, _, _) in self._traces.items() if user == user_id]
            for trace_id in mine:
                del self._traces[trace_id]
            return len(mine)

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int:
        ids = needles(fact_ids)
        with self._lock:
            citing = [i for i, (user, _, text) in self._traces.items()
                      if user == user_id and any(n in text for n in ids)]  # fmt: skip
            for trace_id in citing:
                del self._traces[trace_id]
            return len(citing)

    def files(self) -> list[Path]:
        return []

    def close(self) -> None:
        return None
