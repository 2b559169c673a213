"""``SqliteEventStore``: the default event store, one SQLite file in WAL mode.

Commits are durable (``synchronous=FULL``). Several threads may share one store, and several
stores (threads or processes) may share one file: an append takes SQLite's write lock with
``BEGIN IMMEDIATE`` and checks the stream version inside it; ``UNIQUE(user_id, version)``
backs that check up. ``streams`` keeps each user's version, so it survives ``purge_facts``.

Erasure deletes with ``secure_delete=ON`` (a deleted row, and a page freed, are overwritten
with zeros), then checkpoints and truncates the WAL, so neither the file nor its ``-wal`` holds
a byte of the erased user; with ``vacuum="full"`` it rewrites the file too (``VACUUM``), which
gives the freed pages back and costs what the whole file holds. The tombstone keeps only an
HMAC of the user id under a random key stored in ``meta``: whoever holds the file can check
that a given user was erased (``was_erased``), but the id itself is gone.

``snapshots`` keeps, per user, a folded state at a stream version (``SnapshotStore``), so a
user not resident loads in one read and a short tail. It is a cache over the log: erasure and
purges delete the user's snapshot in their own transaction, and any purge or erasure retires
every snapshot written before it (they are written again as users are).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memkg.errors import ConcurrencyConflict, StoreError, sqlite_failure
from memkg.events.memory import (
    check_batch,
    group_fact_ids,
    payload_text,
    purge_counts,
    removal_digest,
    stored_event,
    subject_digest,
    utc_instant,
)
from memkg.events.store import (
    REVIEWS_WHERE,
    AppendResult,
    Companion,
    ErasureCounts,
    check_companions,
    purged_meanwhile,
)
from memkg.events.stored import Shape
from memkg.model.event import Event, NewEvent, StoredRow, row_payload, row_time
from memkg.sqlitefile import Checkpointer, attach, compact, detach

SCHEMA_VERSION = 3
"""The newest file schema this release reads. 2: the file may hold snapshots (a release that
would erase a user but not their snapshot refuses it). 3: an observation's idempotency key is
stored scoped by its domain (``engine.facts.stored_key``); a writer that opens an older file
scopes the keys stored before (``_SCOPED_KEYS``) and marks it, so that a release that would
look the keys up unscoped, and store a retry twice, refuses it."""
_OPERATIONAL = frozenset({"store.locked", "store.io", "store.full", "store.unavailable"})
"""Failures of the disk or of another process: the file is fine, the message says so."""
_BATCH = 5_000
_MAX_SEQ = 2**63 - 1
_COLUMNS = (
    "seq, event_id, user_id, version, type, domain, fact_id, audit_log_id, payload, recorded_at"
)
_MARKS = ", ".join("?" * 10)
_MARK = (
    "SELECT (SELECT version FROM streams WHERE user_id = ?),"
    " (SELECT value FROM meta WHERE key = 'purges')"
)
_PURGED = (
    "INSERT INTO meta VALUES ('purges', '1')"
    " ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
)
"""Every purge and erasure counts, so that other processes' caches notice it."""
_STREAM_VERSION = "SELECT coalesce(max(version), 0) FROM {table} WHERE user_id = ?"
_APPEND_AT = (
    "SELECT (SELECT coalesce(max(version), 0) FROM streams WHERE user_id = ?),"
    " (SELECT coalesce(max(seq), 0) FROM sqlite_sequence)"
)
"""Where an append lands: the stream's version and the log's last seq, in one statement."""
_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES ({_MARKS})"
_APPENDED: Shape[AppendResult] = Shape(AppendResult, {})
_APPENDED_FIELDS = _APPENDED.fields_set(("events",))
_ONE_STATEMENT = 32
"""Appends of at most this many events go in as one multi-row ``INSERT`` (a statement is
atomic on its own, so an append in a batch needs no savepoint)."""
_INSERT_ROWS = tuple(
    f"INSERT INTO events ({_COLUMNS}) VALUES {', '.join([f'({_MARKS})'] * n)}"
    for n in range(_ONE_STATEMENT + 1)
)
_SET_STREAM = "INSERT OR REPLACE INTO streams VALUES (?, ?)"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
    version INTEGER NOT NULL, type TEXT NOT NULL, domain TEXT, fact_id TEXT, audit_log_id TEXT,
    payload TEXT NOT NULL, recorded_at TEXT NOT NULL, UNIQUE (user_id, version)
);
CREATE INDEX IF NOT EXISTS events_fact_id ON events (fact_id);
CREATE INDEX IF NOT EXISTS events_audit_log_id ON events (audit_log_id);
CREATE INDEX IF NOT EXISTS events_reviews ON events (seq) WHERE {reviews};
CREATE TABLE IF NOT EXISTS streams (user_id TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS idempotency (user_id TEXT NOT NULL, key TEXT NOT NULL,
    first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, PRIMARY KEY (user_id, key));
CREATE TABLE IF NOT EXISTS subject_salts (user_id TEXT PRIMARY KEY, salt BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS erasures (
    erasure_id TEXT PRIMARY KEY, at TEXT NOT NULL, subject_digest TEXT NOT NULL,
    events INTEGER NOT NULL, digest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS erasure_order (erasure_id TEXT PRIMARY KEY, purges INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (user_id TEXT PRIMARY KEY, version INTEGER NOT NULL,
    seq INTEGER NOT NULL, purges INTEGER NOT NULL, format TEXT NOT NULL, body BLOB NOT NULL)
"""
_PURGES = "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'purges'), 0)"
_AT_EVENT = "EXISTS (SELECT 1 FROM events WHERE user_id = ? AND version = ? AND seq = ?)"
_READ_SNAPSHOT = (
    f"SELECT version, seq, body FROM snapshots WHERE user_id = ? AND format = ?"
    f" AND purges = {_PURGES}"
)
_WRITE_SNAPSHOT = (
    f"INSERT OR REPLACE INTO snapshots SELECT ?, ?, ?, ?, ?, ? WHERE {_PURGES} = ? AND {_AT_EVENT}"
)
"""A snapshot is stored only at an event the stream still holds, and only while no purge or
erasure happened since the state it holds was read (another process's purge wins)."""
_SCOPED_KEYS = (
    # a key whose write is gone is free already (``append`` stores such a key anew)
    "DELETE FROM idempotency WHERE NOT EXISTS"
    " (SELECT 1 FROM events WHERE seq = first_seq AND user_id = idempotency.user_id)",
    "CREATE TEMP TABLE scoped AS SELECT i.user_id, i.key AS old, e.domain || '/' || i.key AS key,"
    " i.first_seq, i.last_seq FROM idempotency AS i JOIN events AS e"
    " ON e.seq = i.first_seq AND e.user_id = i.user_id"
    " WHERE e.type = 'fact.asserted' AND e.domain IS NOT NULL AND (i.key NOT LIKE 'migration:%'"
    " OR CASE WHEN json_valid(e.payload) THEN json_type(e.payload, '$.request') END = 'text')",
    # moved out, then in: renamed row by row, ``x`` would meet a ``travel/x`` not moved yet
    "DELETE FROM idempotency WHERE EXISTS (SELECT 1 FROM temp.scoped AS s"
    " WHERE s.user_id = idempotency.user_id AND s.old = idempotency.key)",
    "INSERT INTO idempotency SELECT user_id, key, first_seq, last_seq FROM temp.scoped",
    "DROP TABLE temp.scoped",
)
"""An older file's observation keys, scoped by their domain: every key whose write began
with a ``fact.asserted`` of a domain (releases before request digests stored none), but a
migration's own (``migration:<plan>:<fact id>``, no request digest)."""


_DUE = "SELECT value FROM meta WHERE key = 'scrub_due'"
_SCRUB_DUE = (
    "INSERT INTO meta VALUES ('scrub_due', '1')"
    " ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
)
"""Written in an erasure's or purge's transaction: its rows are to be scrubbed from the WAL.
A count, so that a scrub clears only what was due when it began (another process's erasure
committed meanwhile, whose own scrub a reader held up, stays due)."""


def _can_create(path: Path) -> bool:
    """Whether ``path`` exists or this process may create it (asked only once opening failed;
    a file it makes to find out is removed again)."""
    if path.exists():
        return True
    try:
        path.touch(exist_ok=False)
    except OSError:
        return False
    with suppress(OSError):
        path.unlink()
    return True


class SqliteEventStore:
    """The event log in one SQLite file; see the module docstring for the guarantees."""

    def __init__(
        self, path: str | Path, *, busy_timeout: float = 30.0,
        vacuum: Literal["off", "vacuum", "full"] = "vacuum",
    ) -> None:  # fmt: skip
        self.path = Path(path)
        self._rewrite = vacuum == "full"
        """Whether an erasure rewrites the file (``EngineConfig.erase_vacuum``)."""
        self._lock = threading.RLock()
        self._batch_depth = 0
        self._batch_versions: dict[str, int] = {}
        """Inside a batch: the stream versions its appends reached, not yet in ``streams``
        (written once, before the batch commits or any other statement of it runs)."""
        self._batch_seq: int | None = None
        """Inside a batch, once an append numbered events: the last seq it assigned."""
        self._batch_purges: int | None = None
        """Inside a batch, once read: the purge count (no other writer runs until it ends)."""
        self._scrub: bool | None = None
        """Inside ``erasing``: whether the block removed rows (the file is rewritten once it
        committed); None outside."""
        self._checkpoints: Checkpointer | None = None
        self._written = 0
        """Bytes of payload the open transaction appended (for the checkpointer)."""
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise sqlite_failure(exc, f"cannot open event store {self.path}") from exc
        try:
            meta = self._prepare(busy_timeout)
        except (sqlite3.Error, StoreError) as exc:
            self._db.close()
            if isinstance(exc, StoreError) and exc.code in _OPERATIONAL:
                raise
            shm = self.path.with_name(f"{self.path.name}-shm")
            if not _can_create(shm):
                raise StoreError(
                    f"{self.path}: its folder is read-only, and SQLite must create {shm.name} "
                    "beside a database it reads (write-ahead log): make the folder writable, "
                    "or copy the file into a writable one",
                    code="store.read_only",
                ) from exc
            raise StoreError(
                f"{self.path} is not a memkg store or is damaged ({exc}); point --db at a memkg "
                "database, or at a new file to start one",
                code="store.unreadable",
            ) from exc
        if int(meta["schema_version"]) > SCHEMA_VERSION:
            self.close()
            raise StoreError(
                f"{self.path} has event store schema {meta['schema_version']}, newer than this "
                f"memkg understands ({SCHEMA_VERSION}): upgrade memkg to open it"
            )
        self._secret = bytes.fromhex(meta["subject_key"])
        self._checkpoints = attach(self._db, self.path)

    def _prepare(self, busy_timeout: float) -> dict[str, str]:
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        self._set_journal_mode(busy_timeout)
        for pragma in ("synchronous = FULL", "secure_delete = ON", "foreign_keys = ON"):
            self._db.execute(f"PRAGMA {pragma}")
        try:
            with self._write() as db:
                for statement in _SCHEMA.format(reviews=REVIEWS_WHERE).split(";"):
                    db.execute(statement)
                db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?), ('subject_key', ?)",
                    (str(SCHEMA_VERSION), os.urandom(32).hex()),
                )
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                if int(meta["schema_version"]) < SCHEMA_VERSION:  # an older release's file
                    for statement in _SCOPED_KEYS:
                        db.execute(statement)
                    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                               (str(SCHEMA_VERSION),))  # fmt: skip
                return meta
        except StoreError as exc:
            if exc.code != "store.read_only":
                raise
            # A read-only file still serves reads; every write says why it cannot.
            return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        expected_purges: int | None = None,
    ) -> AppendResult:
        check_batch(user_id, events)
        texts = [payload_text(e) for e in events]
        rows = [_row(e, text) for e, (text, _read) in zip(events, texts, strict=True)]
        # In a batch, an append without a key is one statement, atomic without a savepoint.
        single = idempotency_key is None and 0 < len(rows) <= _ONE_STATEMENT
        with self._write(appending=True, savepoint=not single) as db:
            if idempotency_key is not None:
                seen = db.execute(
                    "SELECT first_seq, last_seq FROM idempotency WHERE user_id = ? AND key = ?",
                    (user_id, idempotency_key),
                ).fetchone()
                if seen is not None:
                    found = db.execute(
                        f"SELECT {_COLUMNS} FROM events WHERE user_id = ? AND seq BETWEEN ? AND ?"
                        " ORDER BY seq",
                        (user_id, *seen),
                    ).fetchall()
                    if found and found[0][0] == seen[0]:
                        return AppendResult(events=tuple(map(_event, found)), duplicate=True)
                    # the write it stood for was purged: the key is free again
                    db.execute(
                        "DELETE FROM idempotency WHERE user_id = ? AND key = ?",
                        (user_id, idempotency_key),
                    )
            if expected_purges is not None:  # no purge can run while we hold the write lock
                purges = self._batch_purges if self._batch_depth else None  # read in the batch
                if purges is None:
                    purges = int(db.execute(f"SELECT {_PURGES}").fetchone()[0])
                    if self._batch_depth:
                        self._batch_purges = purges
                if purges != expected_purges:
                    raise purged_meanwhile(user_id, expected_purges, purges)
            # We hold the write lock, so the next seqs are ours to assign.
            version, base = self._batch_versions.get(user_id), self._batch_seq
            if version is None or base is None:
                stored_version, stored_base = db.execute(_APPEND_AT, (user_id,)).fetchone()
                version = stored_version if version is None else version
                base = stored_base if base is None else base
            if expected_version is not None and expected_version != version:
                raise ConcurrencyConflict(user_id, expected_version, version)
            if not rows:
                return AppendResult(events=())
            numbered = [
                (base + i, row[0], user_id, version + i, *row[1:]) for i, row in enumerate(rows, 1)
            ]
            try:
                if single:
                    values = [value for row in numbered for value in row]
                    db.execute(_INSERT_ROWS[len(numbered)], values)
                else:
                    db.executemany(_INSERT, numbered)
            except sqlite3.IntegrityError as exc:
                if "events.version" in str(exc):  # another writer bypassed the streams table
                    actual = _scalar(db, _STREAM_VERSION.format(table="events"), user_id)
                    raise ConcurrencyConflict(user_id, version, actual) from exc
                raise StoreError(f"cannot append to stream {user_id!r}: {exc}") from exc
            self._written += sum(len(row[5]) for row in rows)
            if idempotency_key is not None:
                db.execute(
                    "INSERT INTO idempotency VALUES (?, ?, ?, ?)",
                    (user_id, idempotency_key, base + 1, base + len(rows)),
                )
            if self._batch_depth:
                self._batch_versions[user_id] = version + len(rows)
                self._batch_seq = base + len(rows)
            else:
                db.execute(_SET_STREAM, (user_id, version + len(rows)))
        # the events as a read of these rows gives them, from the payloads already read back
        events_stored = tuple(
            _appended(row, read, event.recorded_at)
            for row, event, (_text, read) in zip(numbered, events, texts, strict=True)
        )
        return _APPENDED.build({"events": events_stored, "duplicate": False}, _APPENDED_FIELDS)

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> list[Event]:
        query = (f"SELECT {_COLUMNS} FROM events WHERE user_id = ? AND version > ? AND seq <= ?"
                 " ORDER BY version")  # fmt: skip
        limit = _MAX_SEQ if up_to_seq is None else up_to_seq
        return list(map(_event, self._read(query, (user_id, after_version, limit))))

    def read_rows(
        self, user_id: str, *, after_version: int = 0, up_to_version: int | None = None,
        types: Sequence[str] = (),
    ) -> list[StoredRow]:  # fmt: skip
        """The user's stream as stored rows (``RowStream``): ``read_stream`` without building
        the events, after stream version ``after_version`` (default: from the first), up to
        ``up_to_version`` (default: the last), of the event ``types`` given (default: all)."""
        where = "user_id = ? AND version > ? AND version <= ?"
        if types:
            where += f" AND type IN ({', '.join('?' * len(types))})"
        limit = _MAX_SEQ if up_to_version is None else up_to_version
        query = f"SELECT {_COLUMNS} FROM events WHERE {where} ORDER BY version"
        rows: list[StoredRow] = self._read(query, (user_id, after_version, limit, *types))
        return rows

    def read_snapshot(self, user_id: str, format_: str) -> tuple[int, int, bytes] | None:
        """The user's snapshot (``SnapshotStore``) as ``(version, seq, body)``, when one of
        ``format_`` is stored, no purge or erasure happened since it was written, and the
        stream still holds its event at ``version``, numbered ``seq``; else ``None``."""
        try:
            found = self._read(_READ_SNAPSHOT, (user_id, format_))
            if not found:
                return None
            version, seq, body = found[0]
            if not isinstance(body, bytes):
                return None
            if not self._read(f"SELECT {_AT_EVENT}", (user_id, version, seq))[0][0]:
                return None
        except StoreError:  # a file this code did not create (read-only, older): no snapshots
            return None
        return int(version), int(seq), body

    def write_snapshot(
        self, user_id: str, version: int, seq: int, purges: int, format_: str, body: bytes
    ) -> bool:
        """Keep ``body``, the user's folded state at ``version`` (its event numbered ``seq``),
        read when the store had seen ``purges`` purges and erasures (``SnapshotStore``).
        Stored only if that still holds; ``False`` when it was not stored."""
        row = (user_id, version, seq, purges, format_, body, purges, user_id, version, seq)
        with self._write() as db:
            return bool(db.execute(_WRITE_SNAPSHOT, row).rowcount)

    def row_event(self, row: StoredRow) -> Event:
        """The event of one row of ``read_rows``."""
        return _event(row)

    def read_all(self, *, after_seq: int = 0, up_to_seq: int | None = None) -> Iterator[Event]:
        return map(_event, self.read_all_rows(after_seq=after_seq, up_to_seq=up_to_seq))

    def read_all_rows(
        self, *, after_seq: int = 0, up_to_seq: int | None = None
    ) -> Iterator[StoredRow]:
        """The log as stored rows (``RowStream``): ``read_all`` without building the events."""
        limit = _MAX_SEQ if up_to_seq is None else up_to_seq
        while True:
            # One query per batch: memory stays flat and other threads get the lock in between.
            rows: list[StoredRow] = self._read(
                f"SELECT {_COLUMNS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                (after_seq, limit, _BATCH),
            )
            if not rows:
                return
            yield from rows
            after_seq = rows[-1][0]

    def read_rows_by_user(self) -> Iterator[StoredRow]:
        """The log as stored rows, user after user (``RowStream``), read along the
        ``(user_id, version)`` index a batch at a time."""
        after: tuple[str, int] = ("", 0)
        while True:
            rows: list[StoredRow] = self._read(
                f"SELECT {_COLUMNS} FROM events WHERE (user_id, version) > (?, ?)"
                " ORDER BY user_id, version LIMIT ?",
                (*after, _BATCH),
            )
            if not rows:
                return
            yield from rows
            after = (rows[-1][2], rows[-1][3])

    def read_reviews(self, *, after_seq: int = 0, review_id: str | None = None) -> Iterator[Event]:
        # one review's by the fact-id index; the others' by the partial index of the reviews
        one, more = ("fact_id = ? AND ", (review_id,)) if review_id is not None else ("", ())
        while True:
            rows: list[StoredRow] = self._read(
                f"SELECT {_COLUMNS} FROM events WHERE {one}{REVIEWS_WHERE} AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (*more, after_seq, _BATCH),
            )
            if not rows:
                return
            yield from map(_event, rows)
            after_seq = rows[-1][0]

    def stream_version(self, user_id: str) -> int:
        with self._lock:
            if user_id in self._batch_versions:
                return self._batch_versions[user_id]
        rows = self._read("SELECT version FROM streams WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        with self._lock:
            pending = self._batch_versions.get(user_id)
            if pending is not None and self._batch_purges is not None:
                return pending, self._batch_purges
            row = self._read(_MARK, (user_id,))[0]
            if self._batch_depth:
                self._batch_purges = int(row[1] or 0)
            return pending or int(row[0] or 0), int(row[1] or 0)

    def head(self) -> int:
        return int(self._read("SELECT coalesce(max(seq), 0) FROM events", ())[0][0])

    def purges(self) -> int:
        return int(self._read(f"SELECT {_PURGES}", ())[0][0])

    def users(self) -> list[str]:
        with self._lock:
            self._write_versions()
        return [r[0] for r in self._read("SELECT user_id FROM streams ORDER BY user_id", ())]

    def users_in(self, domain: str) -> list[str]:
        query = "SELECT DISTINCT user_id FROM events WHERE domain = ? ORDER BY user_id"
        return [r[0] for r in self._read(query, (domain,))]

    def subject_salt(self, user_id: str) -> bytes:
        query = "SELECT salt FROM subject_salts WHERE user_id = ?"
        rows = self._read(query, (user_id,))
        if rows:
            return bytes(rows[0][0])
        with self._write() as db:
            salt = (user_id, os.urandom(16))
            db.execute("INSERT OR IGNORE INTO subject_salts VALUES (?, ?)", salt)
            return bytes(_scalar(db, query, user_id))

    def fact_ids_with_audit_id(self, audit_log_id: str) -> dict[str, list[str]]:
        where = "audit_log_id = ? AND fact_id IS NOT NULL"
        query = f"SELECT user_id, fact_id FROM events WHERE {where} ORDER BY seq"
        return group_fact_ids(self._read(query, (audit_log_id,)))

    def purge_facts(
        self, user_id: str, fact_ids: Sequence[str], *, companions: Sequence[Companion] = ()
    ) -> ErasureCounts:
        check_companions(self.database, companions)
        removed: list[tuple[int, str]] = []
        keys = 0
        with self._write() as db:
            others = tuple(c.erase_rows(db, user_id) for c in companions)
            for fact_id in dict.fromkeys(fact_ids):
                where, key = "WHERE user_id = ? AND fact_id = ?", (user_id, fact_id)
                removed += db.execute(f"SELECT seq, event_id FROM events {where}", key)
                db.execute(f"DELETE FROM events {where}", key)
            for seq, _ in removed:  # a key goes with the write it stood for
                keys += db.execute(
                    "DELETE FROM idempotency WHERE user_id = ? AND first_seq = ?", (user_id, seq)
                ).rowcount
            db.execute("DELETE FROM snapshots WHERE user_id = ?", (user_id,))
            db.execute(_PURGED)
            if removed or any(others):
                db.execute(_SCRUB_DUE)
        if removed or any(others) or self._scrub_due():  # nothing deleted or due: no scrub
            self._compact()
        return purge_counts(removed, keys, others)

    @property
    def database(self) -> str:
        """Where the log lives, for stores kept in the same file (``Companion``)."""
        return f"sqlite:{self.path.resolve()}"

    def erase_subject(
        self, user_id: str, *, erasure_id: str, at_iso: str,
        companions: Sequence[Companion] = (),
    ) -> ErasureCounts:  # fmt: skip
        check_companions(self.database, companions)
        again = self.was_erased(user_id)  # a retry: a scrub the first left undone
        with self._write() as db:
            others = tuple(c.erase_rows(db, user_id) for c in companions)
            ids = "SELECT event_id FROM events WHERE user_id = ? ORDER BY seq"
            removed = [r[0] for r in db.execute(ids, (user_id,))]
            db.execute("DELETE FROM events WHERE user_id = ?", (user_id,))
            salts = db.execute("DELETE FROM subject_salts WHERE user_id = ?", (user_id,)).rowcount
            keys = db.execute("DELETE FROM idempotency WHERE user_id = ?", (user_id,)).rowcount
            db.execute("DELETE FROM streams WHERE user_id = ?", (user_id,))
            db.execute("DELETE FROM snapshots WHERE user_id = ?", (user_id,))
            db.execute(_PURGED)
            digest = removal_digest(removed)
            db.execute(
                "INSERT OR IGNORE INTO erasures VALUES (?, ?, ?, ?, ?)",
                (erasure_id, at_iso, subject_digest(self._secret, user_id), len(removed), digest),
            )
            # the purge count this erasure set: what orders it (``was_erased``)
            db.execute(f"INSERT OR IGNORE INTO erasure_order VALUES (?, {_PURGES})", (erasure_id,))
            if removed or salts or keys or any(others):
                db.execute(_SCRUB_DUE)
        if removed or salts or keys or any(others) or again or self._scrub_due():
            self._compact()
        return ErasureCounts(events=len(removed), salts=salts, idempotency_keys=keys,
                             digest=digest, companions=others)  # fmt: skip

    def was_erased(self, user_id: str, after: int | None = None) -> bool:
        """Whether a tombstone records this user's erasure (counted past ``after``)."""
        digest = subject_digest(self._secret, user_id)
        if after is None:
            return bool(self._read("SELECT 1 FROM erasures WHERE subject_digest = ?", (digest,)))
        query = ("SELECT 1 FROM erasures JOIN erasure_order USING (erasure_id)"
                 " WHERE subject_digest = ? AND purges > ?")  # fmt: skip
        return bool(self._read(query, (digest, after)))

    def files(self) -> list[Path]:
        candidates = [self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")]
        return [p for p in candidates if p.exists()]

    def close(self) -> None:
        with self._lock:
            detach(self._checkpoints)
            self._checkpoints = None
            self._db.close()

    def _set_journal_mode(self, busy_timeout: float) -> None:
        # Switching a new file to WAL needs an exclusive lock, which the busy handler does not
        # wait for: another process creating the same file can make it fail once.
        deadline = time.monotonic() + busy_timeout
        mode = None
        while mode is None:
            try:
                mode = _scalar(self._db, "PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        if mode != "wal":
            raise StoreError(f"{self.path}: cannot use WAL journal mode (got {mode!r})")

    @contextmanager
    def batch(self, streams: Collection[str] = ()) -> Iterator[None]:
        with self._lock:  # one writer at a time: ``streams`` need no locks of their own
            if self._batch_depth:
                self._batch_depth += 1
                try:
                    yield
                finally:
                    self._batch_depth -= 1
                return
            with self._write():
                self._batch_depth = 1
                try:
                    yield
                    self._write_versions()
                finally:
                    self._batch_depth = 0
                    self._batch_versions.clear()
                    self._batch_seq = self._batch_purges = None

    @contextmanager
    def erasing(self, streams: Collection[str] = ()) -> Iterator[None]:
        """One transaction for the erasures and purges of the block; the file is scrubbed
        once, after it committed (contract item 8), or when an earlier block's scrub is still
        due though this one removed nothing (its retry); ``streams`` lock nothing more here
        (a write transaction locks the whole file)."""
        with self._lock:
            if self._scrub is not None:  # nested: the outer block commits and rewrites
                yield
                return
            self._scrub = False
            try:
                with self.batch():
                    yield
            finally:
                scrub, self._scrub = self._scrub, None
            if scrub or self._scrub_due():
                self._compact()

    def _write_versions(self) -> None:
        """Write the stream versions the batch's appends reached to ``streams``."""
        if self._batch_versions:
            self._db.executemany(_SET_STREAM, list(self._batch_versions.items()))
            self._batch_versions.clear()

    @contextmanager
    def _write(
        self, *, appending: bool = False, savepoint: bool = True
    ) -> Iterator[sqlite3.Connection]:
        """The connection inside a write transaction; inside a batch, inside a savepoint (an
        append of one statement needs none). A write other than an append may change what the
        batch remembers, so it runs after the pending stream versions are written and makes
        the batch read the stream head and purge count again."""
        with self._lock:
            if self._batch_depth:
                if not appending:
                    self._write_versions()
                    self._batch_seq = self._batch_purges = None
                if savepoint:
                    yield from self._savepoint()
                    return
                try:
                    yield self._db
                except sqlite3.Error as exc:
                    raise sqlite_failure(exc, f"event store {self.path}: write failed") from exc
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"event store {self.path} is not writable") from exc
            try:
                yield self._db
                self._db.execute("COMMIT")
                if self._checkpoints is not None:
                    self._checkpoints.wrote(self._written)
            except BaseException as exc:
                if self._db.in_transaction:  # a failed COMMIT may already have ended it
                    with suppress(sqlite3.Error):  # the first failure is the one to report
                        self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise sqlite_failure(exc, f"event store {self.path}: write failed") from exc
                raise
            finally:
                self._written = 0

    def _savepoint(self) -> Iterator[sqlite3.Connection]:
        """Inside a batch: one append is atomic on its own, the commit comes at the end."""
        self._db.execute("SAVEPOINT append")
        try:
            yield self._db
        except BaseException as exc:
            self._db.execute("ROLLBACK TO append")
            self._db.execute("RELEASE append")
            if isinstance(exc, sqlite3.Error):
                raise sqlite_failure(exc, f"event store {self.path}: write failed") from exc
            raise
        self._db.execute("RELEASE append")

    def _read(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"event store {self.path}: read failed") from exc

    def _compact(self) -> None:
        """Empty the WAL (and rewrite the file, with ``vacuum="full"``), so that deleted rows
        leave no bytes behind (inside ``erasing``: once the block committed); then the scrub
        is no longer due. One a reader held up stays due: a retry, or the next erasure or
        purge, whatever it finds, runs it (``_scrub_due``)."""
        with self._lock:
            if self._scrub is not None:
                self._scrub = True
                return
            due = self._read(_DUE, ())
            compact(self._db, self.path, "rows", rewrite=self._rewrite)
            if due:  # what was due when the scrub began, unless another erasure added to it
                with self._write() as db:
                    db.execute("DELETE FROM meta WHERE key = 'scrub_due' AND value = ?", due[0])

    def _scrub_due(self) -> bool:
        """Whether rows an erasure or purge deleted may still be in the WAL."""
        return bool(self._read(_DUE, ()))


def _row(e: NewEvent, payload: str) -> tuple[Any, ...]:
    at = utc_instant(e.recorded_at).isoformat()
    return (e.event_id, e.type.value, e.domain, e.fact_id, e.audit_log_id, payload, at)


def _appended(row: StoredRow, payload: dict[str, Any], recorded_at: datetime) -> Event:
    """The event a read of ``row`` gives, from its payload as already read back."""
    seq, event_id, user_id, version, type_, domain, fact_id, audit_log_id, _, _ = row
    return stored_event(seq, event_id, user_id, version, type_, domain, fact_id, audit_log_id,
                        payload, utc_instant(recorded_at))  # fmt: skip


def _scalar(db: sqlite3.Connection, query: str, *params: Any) -> Any:
    return db.execute(query, params).fetchone()[0]


def _event(row: StoredRow) -> Event:
    seq, event_id, user_id, version, type_, domain, fact_id, audit_log_id, _, _ = row
    return stored_event(
        seq, event_id, user_id, version, type_, domain, fact_id, audit_log_id,
        row_payload(row), row_time(row),
    )  # fmt: skip
