"""``SqliteDecisionLog``: decisions in a SQLite file, by default the event store's own file.

Appends from concurrent threads are committed in groups: the first waiting append commits
every row queued behind it in one transaction, and each append returns only once its own row
is committed (``synchronous=FULL``), so grouping saves commits without weakening the
acknowledgement. A lone append commits alone, as before. A checked append
(``append_checked``) rides in the same groups: its row carries its own check.

Erasure deletes with ``secure_delete=ON`` (rows and freed pages overwritten with zeros), then
checkpoints and truncates the WAL, so no page of the file keeps a byte of an erased user's
decisions.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from memkg.decisions.log import ROWS_MAX, Citing, duplicate, not_found, not_listed
from memkg.errors import sqlite_failure
from memkg.model.decision import Decision
from memkg.sqlitefile import Checkpointer, attach, compact, detach

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    decision_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, domain TEXT NOT NULL,
    decided_at TEXT NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS decisions_user ON decisions (user_id);
CREATE TABLE IF NOT EXISTS rule_bundles (digest TEXT PRIMARY KEY, sources TEXT NOT NULL);
"""


_INSERT = "INSERT INTO decisions VALUES (?, ?, ?, ?, ?)"
_CHECKED = (
    "INSERT INTO decisions SELECT ?, ?, ?, ?, ?"
    " WHERE coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'purges'), 0) = ?"
)
"""One write statement: the row, only while the event log beside it (same file) has counted
the purges and erasures the decision read memory at (``SqliteEventStore.stream_mark``)."""
_CANDIDATES = (
    "SELECT decision_id, record FROM decisions WHERE user_id = ? AND EXISTS"
    " (SELECT 1 FROM json_each(?) WHERE instr(record, value) > 0)"
)
_REMOVE = "DELETE FROM decisions WHERE decision_id IN (SELECT value FROM json_each(?))"


class _Pending:
    """One queued append: its row, the purge count it is checked against (``None``: none),
    and how its commit went."""

    __slots__ = ("done", "error", "purges", "row", "stored")

    def __init__(self, row: tuple[str, ...], purges: int | None = None) -> None:
        self.row = row
        self.purges = purges
        self.done = False
        self.stored = False
        self.error: Exception | None = None


def _row(decision: Decision) -> tuple[str, ...]:
    return (
        decision.decision_id,
        decision.request.user_id,
        decision.request.domain,
        decision.decided_at.isoformat(),
        decision.model_dump_json(),
    )


class SqliteDecisionLog:
    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._queue = threading.Condition(threading.Lock())
        self._pending: list[_Pending] = []
        self._leading = False
        self.commits = 0
        """Transactions that committed appends (fewer than appends when they were grouped)."""
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode = WAL")
            for pragma in ("synchronous = FULL", "secure_delete = ON"):
                self._db.execute(f"PRAGMA {pragma}")
            self._create()
        except sqlite3.Error as exc:
            self._db.close()
            raise sqlite_failure(exc, f"cannot open decision log {self.path}") from exc
        self._checkpoints: Checkpointer | None = attach(self._db, self.path)

    def _create(self) -> None:
        try:
            self._db.executescript(_SCHEMA)
        except sqlite3.OperationalError as exc:
            # a read-only file that already holds the log still serves reads
            if sqlite_failure(exc, "").code != "store.read_only":
                raise
            self._db.execute("SELECT 1 FROM decisions LIMIT 1")

    def append(self, decision: Decision) -> None:
        """Log ``decision``; returns once its row is committed to disk."""
        self._queued(_Pending(_row(decision)))

    def append_checked(self, decision: Decision, purges: int) -> bool:
        """Log ``decision`` only while the event log in this file has counted ``purges``
        purges and erasures, checked by the insert itself; whether it was logged."""
        return self._queued(_Pending(_row(decision), purges))

    def _queued(self, mine: _Pending) -> bool:
        """Queue ``mine`` and wait for its group's commit; whether its row was written."""
        with self._queue:
            self._pending.append(mine)
            while not mine.done and self._leading:
                self._queue.wait()
            if not mine.done:
                self._leading = True
        if not mine.done:
            self._lead()
        if mine.error is not None:
            raise mine.error
        return mine.stored

    def _lead(self) -> None:
        """Commit everything queued so far in one transaction, then wake the waiters."""
        batch: list[_Pending] = []
        try:
            with self._lock:
                with self._queue:
                    batch, self._pending = self._pending, []
                self._commit(batch)
        finally:
            with self._queue:
                self._leading = False
                self._queue.notify_all()

    def _commit(self, batch: list[_Pending]) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:  # a failed insert undoes only itself: the others still commit
                for pending in batch:
                    try:
                        if pending.purges is None:
                            self._db.execute(_INSERT, pending.row)
                            pending.stored = True
                        else:
                            written = self._db.execute(_CHECKED, (*pending.row, pending.purges))
                            pending.stored = written.rowcount == 1
                    except sqlite3.IntegrityError as exc:
                        pending.error = duplicate(pending.row[0])
                        pending.error.__cause__ = exc
                self._db.execute("COMMIT")
                if self._checkpoints is not None:
                    self._checkpoints.wrote(sum(len(p.row[-1]) for p in batch))
            except BaseException:
                for pending in batch:
                    pending.stored = False
                if self._db.in_transaction:  # SQLite may have rolled back already (disk full)
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise
            self.commits += 1
        except sqlite3.Error as exc:
            failed = sqlite_failure(exc, f"decision log {self.path}: write failed")
            for pending in batch:
                pending.error = pending.error or failed
        finally:
            for pending in batch:
                pending.done = True

    def get(self, decision_id: str) -> Decision:
        with self._guard("read"):
            row = self._db.execute(
                "SELECT record FROM decisions WHERE decision_id = ?", (decision_id,)
            ).fetchone()
        if row is None:
            raise not_found(decision_id)
        return Decision.model_validate_json(row[0])

    def for_user(
        self, user_id: str, *, limit: int | None = None, domains: Collection[str] | None = None,
        before: str | None = None,
    ) -> list[Decision]:  # fmt: skip
        where, args = "user_id = ?", [user_id]
        if domains is not None:
            where += " AND domain IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(sorted(domains)))
        with self._guard("read"):
            if before is not None:
                row = self._db.execute(
                    f"SELECT rowid FROM decisions WHERE decision_id = ? AND {where}",
                    (before, *args),
                ).fetchone()
                if row is None:
                    raise not_listed(before, user_id, domains)
                where += " AND rowid < ?"
                args.append(row[0])
            # the newest first, by the index on the user: a listing reads what it returns
            rows = self._db.execute(
                f"SELECT record FROM (SELECT rowid AS r, record FROM decisions WHERE {where}"
                " ORDER BY rowid DESC LIMIT ?) ORDER BY r",
                (*args, -1 if limit is None else min(limit, ROWS_MAX)),
            ).fetchall()
        return [Decision.model_validate_json(r[0]) for r in rows]

    def recent(self, limit: int) -> list[Decision]:
        if limit <= 0:
            return []
        query = (
            "SELECT record FROM (SELECT rowid AS r, record FROM decisions ORDER BY rowid DESC"
            " LIMIT ?) ORDER BY r"
        )
        with self._guard("read"):
            rows = self._db.execute(query, (min(limit, ROWS_MAX),)).fetchall()
        return [Decision.model_validate_json(r[0]) for r in rows]

    def save_bundle(self, digest: str, sources: dict[str, str]) -> None:
        with self._guard("write"):
            self._db.execute(
                "INSERT OR IGNORE INTO rule_bundles VALUES (?, ?)",
                (digest, json.dumps(sources, sort_keys=True)),
            )

    def bundle(self, digest: str) -> dict[str, str] | None:
        with self._guard("read"):
            row = self._db.execute(
                "SELECT sources FROM rule_bundles WHERE digest = ?", (digest,)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def remove(self, decision_id: str) -> bool:
        with self._guard("write"):
            removed = self._db.execute(_REMOVE, (json.dumps([decision_id]),)).rowcount
        return self._scrubbed(removed) > 0

    tables = ("decisions",)

    @property
    def database(self) -> str:
        """Where the log lives: beside the events in one file, an erasure removes both at once."""
        return f"sqlite:{self.path.resolve()}"

    def erase_rows(self, db: sqlite3.Connection, user_id: str) -> int:
        """The user's decisions, removed through the event store's open transaction."""
        return db.execute("DELETE FROM decisions WHERE user_id = ?", (user_id,)).rowcount

    def erase_user(self, user_id: str) -> int:
        with self._guard("erasure"):
            removed = self._db.execute("DELETE FROM decisions WHERE user_id = ?", (user_id,))
            return self._scrubbed(removed.rowcount)

    def citing(self, fact_ids: Collection[str], merged_ids: Collection[str] = ()) -> Citing:
        """The decisions citing ``fact_ids`` or naming ``merged_ids``, as a companion that
        removes a user's inside the event store's erasure transaction."""
        return Citing(self.database, _CANDIDATES, _REMOVE, tuple(fact_ids), tuple(merged_ids))

    def erase_citing(
        self, user_id: str, fact_ids: Collection[str], *, merged_ids: Collection[str] = ()
    ) -> int:
        with self._guard("erasure"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                removed = self.citing(fact_ids, merged_ids).erase_rows(self._db, user_id)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise
            return self._scrubbed(removed)

    def _scrubbed(self, count: int) -> int:
        if count:
            compact(self._db, self.path, "decisions")
        return count

    @contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Hold the lock; a failure of SQLite or the disk becomes a ``StoreError`` with a code."""
        with self._lock:
            try:
                yield
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"decision log {self.path}: {what} failed") from exc

    def files(self) -> list[Path]:
        siblings = (self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm"))
        return [self.path, *(p for p in siblings if p.exists())]

    def close(self) -> None:
        with self._lock:
            detach(self._checkpoints)
            self._checkpoints = None
            self._db.close()
