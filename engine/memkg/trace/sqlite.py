"""``SqliteTraceStore``: traces in a SQLite file, by default the event store's own file.

A trace is a diagnostic record, not the audit record a decision is: it is committed with
``synchronous=NORMAL`` (in WAL mode, safe against a crash of the process; a power loss may
lose the last few), so tracing adds no disk flush to a request. Erasure deletes with
``secure_delete=ON``, then checkpoints the WAL and vacuums, as the decision log does, so no
page of the file keeps a byte of an erased user's traces.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from memkg.errors import StoreError, sqlite_failure
from memkg.model.trace import Trace
from memkg.trace.store import duplicate, needles, not_found

_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS traces_user ON traces (user_id);
CREATE INDEX IF NOT EXISTS traces_created ON traces (created_at);
"""


def _at(moment: datetime) -> str:
    """UTC ISO text, so that text order is time order."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


class SqliteTraceStore:
    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode = WAL")
            for pragma in ("synchronous = NORMAL", "secure_delete = ON"):
                self._db.execute(f"PRAGMA {pragma}")
            try:
                self._db.executescript(_SCHEMA)
            except sqlite3.OperationalError as exc:
                # a read-only file that already holds traces still serves reads
                if sqlite_failure(exc, "").code != "store.read_only":
                    raise
                self._db.execute("SELECT 1 FROM traces LIMIT 1")
        except sqlite3.Error as exc:
            self._db.close()
            raise sqlite_failure(exc, f"cannot open trace store {self.path}") from exc

    def put(self, trace: Trace) -> None:
        row = (trace.trace_id, trace.user_id, _at(trace.created_at), trace.model_dump_json())
        with self._guard("write"):
            try:
                self._db.execute("INSERT INTO traces VALUES (?, ?, ?, ?)", row)
            except sqlite3.IntegrityError as exc:
                raise duplicate(trace.trace_id) from exc

    def get(self, trace_id: str) -> Trace:
        with self._guard("read"):
            row = self._db.execute(
                "SELECT record FROM traces WHERE trace_id = ?", (trace_id,)
            ).fetchone()
        if row is None:
            raise not_found(trace_id)
        return Trace.model_validate_json(row[0])

    def expire(self, before: datetime) -> int:
        with self._guard("write"):
            return self._db.execute(
                "DELETE FROM traces WHERE created_at < ?", (_at(before),)
            ).rowcount

    def erase_user(self, user_id: str) -> int:
        with self._guard("erasure"):
            removed = self._db.execute("DELETE FROM traces WHERE user_id = ?", (user_id,))
            return self._scrubbed(removed.rowcount)

    def erase_citing(self, user_id: str, fact_ids: Collection[str]) -> int:
        ids = needles(fact_ids)
        if not ids:
            return 0
        with self._guard("erasure"):
            removed = self._db.execute(
                "DELETE FROM traces WHERE user_id = ? AND EXISTS"
                " (SELECT 1 FROM json_each(?) WHERE instr(record, value) > 0)",
                (user_id, json.dumps(ids)),
            )
            return self._scrubbed(removed.rowcount)

    def _scrubbed(self, count: int) -> int:
        # Deleted rows linger in WAL frames and free pages until checkpointed and vacuumed.
        if count:
            for step in (
                "PRAGMA wal_checkpoint(TRUNCATE)",
                "VACUUM",
                "PRAGMA wal_checkpoint(TRUNCATE)",
            ):
                busy = self._db.execute(step).fetchone()
                if step.startswith("PRAGMA") and busy and busy[0]:
                    raise StoreError(
                        f"{self.path}: traces deleted, WAL not yet truncated (a reader holds "
                        "it); retry the erasure when idle"
                    )
        return count

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        with self._lock:
            try:
                yield
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"trace store {self.path}: {what} failed") from exc

    def files(self) -> list[Path]:
        siblings = (self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm"))
        return [self.path, *(p for p in siblings if p.exists())]

    def close(self) -> None:
        with self._lock:
            self._db.close()
