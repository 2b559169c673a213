"""``SqliteTraceStore``: traces in the SQLite file that holds the events.

A trace is a diagnostic record, not the audit record a decision is: it is committed with
``synchronous=NORMAL`` (in WAL mode, safe against a crash of the process; a power loss may
lose the last few), so tracing adds no disk flush to a request. The table is made on the
first trace.

A trace is written by one ``INSERT ... SELECT`` that holds the file's write lock while it
reads the event log's mark of its user (the ``streams`` row, and the purge count in ``meta``
that every purge and erasure raises): SQLite runs one writer at a time, so either the
erasure comes first and the trace is not written, or the trace does and the erasure, whose
transaction removes it (``erase_rows``), comes after. Deletes run with ``secure_delete=ON``;
the event store empties the WAL after an erasure, and a delete of this store's own
does too, so no page keeps a byte of an erased user's traces.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from memkg.errors import sqlite_failure
from memkg.model.citation import citation_needles
from memkg.model.trace import Trace
from memkg.sqlitefile import Checkpointer, attach, compact, detach
from memkg.trace.store import Citing, citing_ids, duplicate, needles, not_found

_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS traces_user ON traces (user_id);
CREATE INDEX IF NOT EXISTS traces_created ON traces (created_at);
"""
_PUT = (
    "INSERT INTO traces SELECT ?, ?, ?, ?"
    " WHERE EXISTS (SELECT 1 FROM streams WHERE user_id = ?)"
    " AND coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'purges'), 0) = ?"
)
"""One write statement: it takes the write lock before it reads the event log's mark of the
user (its ``streams`` row, the purge count ``SqliteEventStore.stream_mark`` reads)."""
_CITING = (
    "SELECT trace_id, record FROM traces WHERE user_id = ? AND EXISTS"
    " (SELECT 1 FROM json_each(?) WHERE instr(record, value) > 0)"
)
"""A user's traces holding one of the ids somewhere (``citing_ids`` confirms each)."""
_TABLE = "SELECT 1 FROM sqlite_master WHERE name = 'traces'"


def _at(moment: datetime) -> str:
    """UTC ISO text, so that text order is time order."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


class SqliteTraceStore:
    """Traces in ``path`` (the event store's file)."""

    tables = ("traces",)

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._ready = False
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            for pragma in ("synchronous = NORMAL", "secure_delete = ON"):
                self._db.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            self._db.close()
            raise sqlite_failure(exc, f"trace store {self.path}: cannot open") from exc
        self._checkpoints: Checkpointer | None = attach(self._db, self.path)

    @property
    def database(self) -> str:
        """The event store's file: an erasure removes the traces in its own transaction."""
        return f"sqlite:{self.path.resolve()}"

    def put(self, trace: Trace, seen: int) -> bool:
        row = (trace.trace_id, trace.user_id, _at(trace.created_at), trace.model_dump_json(),
               trace.user_id, seen)  # fmt: skip
        if not self._ready:
            with self._write("write"):
                pass  # the table, on the first trace
        with self._guard("write"):
            try:
                stored = int(self._db.execute(_PUT, row).rowcount) == 1
            except sqlite3.IntegrityError as exc:
                raise duplicate(trace.trace_id) from exc
        if stored and self._checkpoints is not None:
            self._checkpoints.wrote(len(row[3]))
        return stored

    def get(self, trace_id: str) -> Trace:
        if not self._table():
            raise not_found(trace_id)
        with self._guard("read"):
            row = self._db.execute(
                "SELECT record FROM traces WHERE trace_id = ?", (trace_id,)
            ).fetchone()
        if row is None:
            raise not_found(trace_id)
        return Trace.model_validate_json(row[0])

    def expire(self, before: datetime) -> int:
        if not self._table():
            return 0
        with self._write("expiry") as db:
            return int(db.execute("DELETE FROM traces WHERE created_at < ?",
                                  (_at(before),)).rowcount)  # fmt: skip

    def erase_rows(self, db: sqlite3.Connection, user_id: str) -> int:
        """The user's traces, removed through the event store's open erasure transaction
        (which scrubs the file afterwards)."""
        if db.execute(_TABLE).fetchone() is None:
            return 0
        return int(db.execute("DELETE FROM traces WHERE user_id = ?", (user_id,)).rowcount)

    def erase_user(self, user_id: str) -> int:
        if not self._table():
            return 0
        with self._write("erasure") as db:
            removed = int(db.execute("DELETE FROM traces WHERE user_id = ?",
                                     (user_id,)).rowcount)  # fmt: skip
        return self._scrubbed(removed)

    def citing(self, fact_ids: Collection[str]) -> Citing:
        return Citing(self, tuple(fact_ids))

    def erase_citing_rows(
        self, db: sqlite3.Connection, user_id: str, fact_ids: Collection[str]
    ) -> int:
        """The user's traces naming ``fact_ids``, removed through ``db`` (the event store's
        open erasure transaction, which scrubs the file afterwards)."""
        ids = needles(fact_ids)
        if not ids or db.execute(_TABLE).fetchone() is None:
            return 0
        rows = db.execute(_CITING, (user_id, json.dumps(citation_needles(ids)))).fetchall()
        gone = citing_ids(rows, ids)
        if gone:
            db.execute("DELETE FROM traces WHERE trace_id IN (SELECT value FROM json_each(?))",
                       (json.dumps(gone),))  # fmt: skip
        return len(gone)

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int:
        if not self._table():
            return 0
        with self._write("erasure") as db:
            removed = self.erase_citing_rows(db, user_id, fact_ids)
        return self._scrubbed(removed)

    def files(self) -> list[Path]:
        siblings = (self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm"))
        return [self.path, *(p for p in siblings if p.exists())]

    def close(self) -> None:
        with self._lock:
            detach(self._checkpoints)
            self._checkpoints = None
            self._db.close()

    def _table(self) -> bool:
        """Whether the table exists (a file no trace was written to has none)."""
        with self._guard("read"):
            if not self._ready:
                found = self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'traces'"
                ).fetchone()
                self._ready = found is not None
            return self._ready

    def _scrubbed(self, count: int) -> int:
        if count:
            with self._guard("erasure"):
                compact(self._db, self.path, "traces")
        return count

    @contextmanager
    def _write(self, what: str) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` (the file's one writer) ... ``COMMIT``; the table on first use."""
        with self._guard(what):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if not self._ready:
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        self._db.execute(statement)
                yield self._db
                self._db.execute("COMMIT")
                self._ready = True
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        with self._lock:
            try:
                yield
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"trace store {self.path}: {what} failed") from exc
