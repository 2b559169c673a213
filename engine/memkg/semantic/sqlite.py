"""``SqliteVectorStore``: memory vectors in the SQLite file that holds the events.

One table, ``vectors`` (user, model, text digest, float32 blob), written through a connection
of its own with ``secure_delete=ON``. Erasing a user deletes the rows (overwritten with zeros),
then empties the WAL into the file, as the event store does, so no byte of the vectors or the
user id stays behind. Cosine is computed in the process over the user's rows (see
``semantic.store``): sqlite-vec would add a loadable extension for a brute-force scan the
process does as well at one user's scale, its shadow tables would need scrubbing too, and a
Python whose ``sqlite3`` lacks ``enable_load_extension`` (pyenv's default build) cannot load it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from memkg.errors import sqlite_failure
from memkg.semantic.store import cosine, pack, unpack
from memkg.sqlitefile import compact

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS vectors (user_id TEXT NOT NULL, model TEXT NOT NULL,"
    " digest TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (user_id, model, digest))"
)
_ALLOWED = (
    "SELECT EXISTS (SELECT 1 FROM streams WHERE user_id = ?)"
    " AND coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'purges'), 0) = ?"
)
"""Whether the user's stream is there and the event log's purge count is still the one given
(``SqliteEventStore.stream_mark``), read in the write transaction that stores the vectors."""
_CHUNK = 500
"""Digests per ``IN (...)`` (SQLite's variable limit is far above; this keeps statements short)."""


class SqliteVectorStore:
    """Vectors in ``path`` (the event store's file); the table is made on the first write."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._ready = False
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._db.execute("PRAGMA secure_delete = ON")
        except sqlite3.Error as exc:
            raise sqlite_failure(exc, f"vector store {self.path}: cannot open") from exc

    def get(self, user_id: str, model: str, digests: Collection[str]) -> dict[str, list[float]]:
        if not self._table():
            return {}
        found: dict[str, list[float]] = {}
        wanted = sorted(set(digests))
        with self._lock:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                try:
                    rows = self._db.execute(
                        "SELECT digest, vector FROM vectors WHERE user_id = ? AND model = ?"
                        f" AND digest IN ({marks})",
                        (user_id, model, *chunk),
                    ).fetchall()
                except sqlite3.Error as exc:
                    raise sqlite_failure(exc, f"vector store {self.path}: read failed") from exc
                found.update((digest, unpack(blob)) for digest, blob in rows)
        return found

    def put(
        self, user_id: str, model: str, vectors: Mapping[str, Sequence[float]], seen: int
    ) -> bool:
        rows = [(user_id, model, d, pack(v)) for d, v in vectors.items()]
        if not rows:
            return True
        with self._write() as db:
            if not _has_log(db) or not db.execute(_ALLOWED, (user_id, seen)).fetchone()[0]:
                return False
            db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?)", rows)
        return True

    def similarities(
        self, user_id: str, model: str, query: Sequence[float], digests: Collection[str]
    ) -> dict[str, float]:
        return {d: cosine(query, v) for d, v in self.get(user_id, model, digests).items()}

    tables = ("vectors",)

    @property
    def database(self) -> str:
        """The event store's file: an erasure removes the vectors in its own transaction."""
        return f"sqlite:{self.path.resolve()}"

    def erase_rows(self, db: sqlite3.Connection, user_id: str) -> int:
        """The user's vectors, removed through the event store's open erasure transaction
        (which scrubs the file afterwards)."""
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchone() is None:
            return 0
        return int(db.execute("DELETE FROM vectors WHERE user_id = ?", (user_id,)).rowcount)

    def erase_user(self, user_id: str) -> int:
        if not self._table():
            return 0
        with self._write() as db:
            removed = db.execute("DELETE FROM vectors WHERE user_id = ?", (user_id,)).rowcount
        if removed:
            self._compact()
        return int(removed)

    def count(self, user_id: str) -> int:
        if not self._table():
            return 0
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM vectors WHERE user_id = ?", (user_id,)
            ).fetchone()
        return int(row[0])

    def files(self) -> list[Path]:
        candidates = [self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")]
        return [p for p in candidates if p.exists()]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _table(self) -> bool:
        """Whether the table exists (a file no vector was written to has none)."""
        with self._lock:
            if not self._ready:
                found = self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'"
                ).fetchone()
                self._ready = found is not None
            return self._ready

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"vector store {self.path} is not writable") from exc
            try:
                if not self._ready:
                    self._db.execute(_SCHEMA)
                yield self._db
                self._db.execute("COMMIT")
                self._ready = True
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise sqlite_failure(exc, f"vector store {self.path}: write failed") from exc
                raise

    def _compact(self) -> None:
        """Rewrite the file and empty the WAL, so that deleted rows leave no bytes behind."""
        with self._lock:
            compact(self._db, self.path, "vectors")


def _has_log(db: sqlite3.Connection) -> bool:
    """Whether the file holds an event log (vectors are kept only beside one)."""
    found = db.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('streams', 'meta')")
    return bool(found.fetchone()[0] == 2)
