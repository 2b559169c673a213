"""``PostgresTraceStore``: traces in the PostgreSQL schema that holds the events.

The table is made on the first trace. A trace is written in a transaction that first locks
its user's ``streams`` row and the log's purge count (``meta``) with ``FOR SHARE``: an erasure
locks the same row ``FOR UPDATE`` and a purge updates the count, so either the erasure or
purge commits first and the trace sees it and is not written, or the trace commits first and
the erasure's transaction removes it (``erase_rows``). The count is locked without waiting
(``NOWAIT``): while an erasure or purge holds it the trace is not written, as it would not be
once that committed. Waiting there, holding the stream row, would close a deadlock with an
erasure of merged ids, which locks the count before the stream of its next id. An erasure
vacuums the table with the event log's (``EngineConfig.erase_vacuum``); with ``full`` no page
keeps an erased user's traces.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkg.model.citation import citation_needles
from memkg.model.trace import Trace
from memkg.postgres import PURGES_ROW, PgAdapter, still_held
from memkg.trace.store import Citing, citing_ids, duplicate, needles, not_found

if TYPE_CHECKING:
    import psycopg

_SCHEMA = (
    """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.traces (
    trace_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS traces_user ON {s}.traces (user_id);
CREATE INDEX IF NOT EXISTS traces_created ON {s}.traces (created_at);
"""
    + PURGES_ROW
)
_CITING = (
    "SELECT trace_id, record FROM {s}.traces WHERE user_id = %s AND EXISTS"
    " (SELECT 1 FROM unnest(%s::text[]) AS n(needle) WHERE strpos(record, needle) > 0)"
)


class PostgresTraceStore(PgAdapter):
    """Traces in ``schema`` (the event store's), shared by every engine process using it."""

    what = "trace store"
    tables = ("traces",)

    def __init__(self, dsn: str, *, schema: str = "memkg", connect_timeout: int = 10) -> None:
        super().__init__(dsn, schema=schema, connect_timeout=connect_timeout)
        self._ready = False

    def put(self, trace: Trace, seen: int) -> bool:
        row = (trace.trace_id, trace.user_id, trace.created_at, trace.model_dump_json())
        with self._tx() as db:
            if not self._ready:
                self._create(db, _SCHEMA)
            if not still_held(db, self._s, trace.user_id, seen):
                return False
            inserted = db.execute(
                f"INSERT INTO {self._s}.traces VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                row,
            )
            if inserted.rowcount == 0:
                raise duplicate(trace.trace_id)
        self._ready = True
        return True

    def get(self, trace_id: str) -> Trace:
        if not self._table():
            raise not_found(trace_id)
        rows = self._read(f"SELECT record FROM {self._s}.traces WHERE trace_id = %s", (trace_id,))
        if not rows:
            raise not_found(trace_id)
        return Trace.model_validate_json(rows[0][0])

    def expire(self, before: datetime) -> int:
        if not self._table():
            return 0
        with self._tx() as db:
            return int(db.execute(f"DELETE FROM {self._s}.traces WHERE created_at < %s",
                                  (before,)).rowcount)  # fmt: skip

    def erase_rows(self, db: psycopg.Connection[tuple[Any, ...]], user_id: str) -> int:
        """The user's traces, removed through the event store's open erasure transaction."""
        if not self._present(db):
            return 0
        query = f"DELETE FROM {self._s}.traces WHERE user_id = %s"
        return int(db.execute(query, (user_id,)).rowcount)

    def erase_user(self, user_id: str) -> int:
        if not self._table():
            return 0
        with self._tx() as db:
            return self.erase_rows(db, user_id)

    def citing(self, fact_ids: Collection[str]) -> Citing:
        return Citing(self, tuple(fact_ids))

    def erase_citing_rows(
        self, db: psycopg.Connection[tuple[Any, ...]], user_id: str, fact_ids: Collection[str]
    ) -> int:
        """The user's traces naming ``fact_ids``, removed through ``db`` (the event store's
        open erasure transaction)."""
        ids = needles(fact_ids)
        if not ids or not self._present(db):
            return 0
        found = db.execute(_CITING.format(s=self._s), (user_id, citation_needles(ids)))
        gone = citing_ids(found.fetchall(), ids)
        if gone:
            db.execute(f"DELETE FROM {self._s}.traces WHERE trace_id = ANY(%s)", (gone,))
        return len(gone)

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int:
        if not self._table():
            return 0
        with self._tx() as db:
            return self.erase_citing_rows(db, user_id, fact_ids)

    def _present(self, db: psycopg.Connection[tuple[Any, ...]]) -> bool:
        found = db.execute("SELECT to_regclass(%s)", (f"{self._s}.traces",)).fetchone()
        return found is not None and found[0] is not None

    def files(self) -> list[Path]:
        return []

    def _table(self) -> bool:
        """Whether the table exists: it is made on the first trace."""
        if not self._ready:
            found = self._read("SELECT to_regclass(%s)", (f"{self._s}.traces",))
            self._ready = found[0][0] is not None
        return self._ready
