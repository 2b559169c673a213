"""The ``TraceStore`` port and its in-memory twin.

Contract:

1. ``put(trace, seen)`` stores a trace once (a second put of the same id is refused), and
   only while its user's stream exists and the log has counted no purge or erasure since
   ``seen`` (the count ``EventStore.stream_mark`` gave before the request read memory),
   checked in the transaction that writes it: a trace racing with its user's erasure is
   not stored, whichever commits first. It returns whether the trace was stored.
2. ``get`` returns a trace as stored, or raises ``NotFound``.
3. ``expire`` removes the traces created before a time.
4. ``erase_user`` removes every trace about a user; ``erase_citing`` a user's traces that
   name any of a set of fact ids (erasure by audit id), matching the record's text as the
   decision log does. Both leave no byte of what they removed in the store's files.
5. Adapters kept in the event store's database are erasure companions
   (``events.store.Companion``): ``erase_rows`` removes a user's traces inside the
   erasure's own transaction; ``citing(fact_ids)`` is the companion that removes a user's
   traces naming those facts there (``erase_citing_rows``), for a purge by audit id.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memkg.errors import InvalidOperation, NotFound
from memkg.model.citation import mentions
from memkg.model.trace import Trace


@runtime_checkable
class TraceStore(Protocol):
    def put(self, trace: Trace, seen: int) -> bool:
        """Store ``trace`` if its user's stream exists and the log's purge count is still
        ``seen``; whether it was stored."""
        ...

    def get(self, trace_id: str) -> Trace: ...

    def expire(self, before: datetime) -> int:
        """Remove the traces created before ``before``; return how many."""
        ...

    def erase_user(self, user_id: str) -> int: ...

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int: ...

    def citing(self, fact_ids: Collection[str]) -> Citing:
        """The user's traces naming ``fact_ids``, as a companion of a purge (contract item 5)."""
        ...

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


def citing_ids(rows: Iterable[tuple[str, str]], fact_ids: Collection[str]) -> list[str]:
    """The ids of the ``(trace_id, record)`` rows whose record cites one of ``fact_ids`` as a
    whole word (``memkg.model.citation``): the rows SQL narrowed by substring, confirmed."""
    return [trace_id for trace_id, record in rows if mentions(json.loads(record), fact_ids)]


class CitingRows(Protocol):
    """A trace store that removes a user's traces naming facts through a connection it is
    handed (the event store's, inside its transaction)."""

    @property
    def database(self) -> str: ...

    def erase_citing_rows(self, db: Any, user_id: str, fact_ids: Collection[str]) -> int: ...


@dataclass(frozen=True)
class Citing:
    """A user's traces naming ``fact_ids``, as a companion of the event store's purge
    (``events.store.Companion``): ``erase_rows`` removes them through its connection."""

    store: CitingRows
    fact_ids: tuple[str, ...]
    tables: tuple[str, ...] = ("traces",)

    @property
    def database(self) -> str:
        return self.store.database

    def erase_rows(self, db: Any, user_id: str) -> int:
        return self.store.erase_citing_rows(db, user_id, self.fact_ids)


Mark = Callable[[str], tuple[int, int]]
"""A user's stream version and the log's purge count, read together (``stream_mark``)."""


class MemoryTraceStore:
    """Traces in a dict: for tests and the in-memory engine.

    ``mark`` is the event store's ``stream_mark``; without one every user counts as having a
    stream and the log as never purged. The in-memory event store takes it as an erasure
    companion (``erase_rows``); the engine's lock keeps a ``put`` from running inside an
    erasure.
    """

    database = "memory"
    tables = ("traces",)

    def __init__(self, mark: Mark | None = None) -> None:
        self._mark: Mark = mark or (lambda _user: (1, 0))
        self._lock = threading.Lock()
        self._traces: dict[str, tuple[str, datetime, str]] = {}

    def put(self, trace: Trace, seen: int) -> bool:
        version, purges = self._mark(trace.user_id)
        with self._lock:
            if trace.trace_id in self._traces:
                raise duplicate(trace.trace_id)
            if version == 0 or purges != seen:
                return False
            self._traces[trace.trace_id] = (
                trace.user_id,
                trace.created_at,
                trace.model_dump_json(),
            )
            return True

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

    def erase_rows(self, db: Any, user_id: str) -> int:
        """The user's traces, as a companion of the in-memory event store's erasure."""
        return self.erase_user(user_id)

    def erase_user(self, user_id: str) -> int:
        with self._lock:
            mine = [i for i, (user, _, _) in self._traces.items() if user == user_id]
            for trace_id in mine:
                del self._traces[trace_id]
            return len(mine)

    def citing(self, fact_ids: Collection[str]) -> Citing:
        return Citing(self, tuple(fact_ids))

    def erase_citing_rows(self, db: Any, user_id: str, fact_ids: Collection[str]) -> int:
        """As ``erase_citing`` (there is no transaction to join in memory)."""
        return self.erase_citing(user_id, fact_ids)

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int:
        ids = needles(fact_ids)
        with self._lock:
            citing = citing_ids(((i, text) for i, (user, _, text) in self._traces.items()
                                 if user == user_id), ids)  # fmt: skip
            for trace_id in citing:
                del self._traces[trace_id]
            return len(citing)

    def files(self) -> list[Path]:
        return []

    def close(self) -> None:
        return None
