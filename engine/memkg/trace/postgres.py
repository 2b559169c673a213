"""``PostgresTraceStore``: traces in PostgreSQL, in the schema of the decision log.

Beside a decision log it shares the log's connection (``shared``): no second connection per
engine, and it closes with the log.

As for the decision log, PostgreSQL keeps deleted rows in dead tuples, its WAL, replicas and
backups until vacuumed and expired: that is the operator's responsibility.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkg.model.trace import Trace
from memkg.postgres import PgAdapter
from memkg.trace.store import duplicate, needles, not_found

if TYPE_CHECKING:
    import psycopg

_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.traces (
    trace_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS traces_user ON {s}.traces (user_id);
CREATE INDEX IF NOT EXISTS traces_created ON {s}.traces (created_at)
"""


class PostgresTraceStore(PgAdapter):
    what = "trace store"

    def __init__(
        self, dsn: str, *, schema: str = "memkg", connect_timeout: int = 10,
        shared: PgAdapter | None = None,
    ) -> None:  # fmt: skip
        super().__init__(dsn, schema=schema, connect_timeout=connect_timeout)
        self._shared = shared
        if shared is not None:
            self._lock = shared._lock
        with self._tx() as db:
            self._create(db, _SCHEMA)

    def _connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        if self._shared is not None:
            return self._shared._connection()
        return super()._connection()

    def close(self) -> None:
        if self._shared is None:  # a shared connection closes with its owner
            super().close()

    def put(self, trace: Trace) -> None:
        row = (trace.trace_id, trace.user_id, trace.created_at, trace.model_dump_json())
        with self._tx() as db:
            inserted = db.execute(
                f"INSERT INTO {self._s}.traces VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                row,
            )
            if inserted.rowcount == 0:
                raise duplicate(trace.trace_id)

    def get(self, trace_id: str) -> Trace:
        rows = self._read(f"SELECT record FROM {self._s}.traces WHERE trace_id = %s", (trace_id,))
        if not rows:
            raise not_found(trace_id)
        return Trace.model_validate_json(rows[0][0])

    def expire(self, before: datetime) -> int:
        with self._tx() as db:
            return db.execute(
                f"DELETE FROM {self._s}.traces WHERE created_at < %s", (before,)
            ).rowcount

    def erase_user(self, user_id: str) -> int:
        with self._tx() as db:
            return db.execute(
                f"DELETE FROM {self._s}.traces WHERE user_id = %s", (user_id,)
            ).rowcount

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int:
        ids = needles(fact_ids)
        if not ids:
            return 0
        with self._tx() as db:
            return db.execute(
                f"DELETE FROM {self._s}.traces WHERE user_id = %s AND EXISTS"
                " (SELECT 1 FROM unnest(%s::text[]) AS n(needle) WHERE strpos(record, needle) > 0)",
                (user_id, ids),
            ).rowcount

    def files(self) -> list[Path]:
        return []
