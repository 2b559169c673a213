"""``PostgresEventStore``: the event log in PostgreSQL, shared by several engine processes.

An append locks the user's row in ``streams`` (``SELECT ... FOR UPDATE``), checks the version
and the idempotency key under that lock, then takes one transaction-level advisory lock for
the whole log before inserting: ``seq`` values are drawn in commit order, so a reader that
follows the log with ``read_all(after_seq=...)`` never misses an event committed late with a
smaller ``seq``. ``UNIQUE(user_id, version)`` backs the version check up.

Erasure deletes the user's rows in one transaction and keeps an HMAC tombstone, as the SQLite
store does. PostgreSQL keeps dead tuples until the table is vacuumed, and its WAL, replicas
and backups still hold the deleted rows: running ``VACUUM``, expiring WAL archives and
backups is the operator's responsibility. Payloads are JSONB, which does not keep key order.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkg.errors import ConcurrencyConflict, StoreError
from memkg.events.memory import (
    check_batch,
    group_fact_ids,
    payload_json,
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
from memkg.model.event import Event, NewEvent
from memkg.postgres import PURGES_ROW, PgAdapter, Vacuum, held_purges, jsonb_exact, lock_key

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION = 2
"""The newest schema this release reads. 2: an observation's idempotency key is stored scoped
by its domain (``engine.facts.stored_key``); opening an older schema scopes the keys stored
before (``_SCOPED_KEYS``) and marks it, so that a release that would look the keys up
unscoped, and store a retry twice, refuses it."""
_SCOPED_KEYS = (
    # a key whose write is gone is free already (``append`` stores such a key anew)
    "DELETE FROM {s}.idempotency AS i WHERE NOT EXISTS"
    " (SELECT 1 FROM {s}.events AS e WHERE e.seq = i.first_seq AND e.user_id = i.user_id)",
    "CREATE TEMP TABLE memkg_scoped ON COMMIT DROP AS SELECT i.user_id, i.key AS old,"
    " e.domain || '/' || i.key AS key, i.first_seq, i.last_seq FROM {s}.idempotency AS i"
    " JOIN {s}.events AS e ON e.seq = i.first_seq AND e.user_id = i.user_id"
    " WHERE e.type = 'fact.asserted' AND e.domain IS NOT NULL AND (i.key NOT LIKE 'migration:%%'"
    " OR jsonb_typeof(e.payload -> 'request') = 'string')",
    # moved out, then in: renamed row by row, ``x`` would meet a ``travel/x`` not moved yet
    "DELETE FROM {s}.idempotency AS i USING memkg_scoped AS m"
    " WHERE m.user_id = i.user_id AND m.old = i.key",
    "INSERT INTO {s}.idempotency SELECT user_id, key, first_seq, last_seq FROM memkg_scoped",
)
"""An older schema's observation keys, scoped by their domain: every key whose write began
with a ``fact.asserted`` of a domain (releases before request digests stored none), but a
migration's own (``migration:<plan>:<fact id>``, no request digest)."""
_ERASED = ("events", "streams", "idempotency", "subject_salts")
"""The tables an erasure deletes from (``erasures`` only gains a tombstone)."""
_PURGES = ("events", "idempotency")
"""The tables a purge deletes from."""
_BATCH = 5_000
_RELOCKS = 3
"""How often an append without an expected version locks a stream erased under it."""
_MAX_SEQ = 2**63 - 1
_COLUMNS = (
    "seq, event_id, user_id, version, type, domain, fact_id, audit_log_id, payload, recorded_at"
)
_INSERT = (
    f"INSERT INTO {{s}}.events ({_COLUMNS[5:]})"
    f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s) RETURNING {_COLUMNS}"
)
_MARK = (
    "SELECT (SELECT version FROM {s}.streams WHERE user_id = %s),"
    " (SELECT value FROM {s}.meta WHERE key = 'purges')"
)
_PURGED = (
    "INSERT INTO {s}.meta VALUES ('purges', '1')"
    " ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text"
)
"""Every purge and erasure counts, so that other processes' caches notice it."""
_PURGES_HELD = (
    "INSERT INTO {s}.meta VALUES ('purges', '0') ON CONFLICT (key) DO UPDATE"
    " SET value = meta.value RETURNING value"
)
"""The purge count's row, locked by a purge or erasure before it reads or deletes anything
(made at 0 if missing): an append checking the count (``FOR SHARE``) then waits for it to
commit and sees the new count, or it for the append, whose events it then reads as any
earlier write's."""
_SCHEMA = (
    """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.events (
    seq BIGSERIAL PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL,
    version BIGINT NOT NULL, type TEXT NOT NULL, domain TEXT, fact_id TEXT, audit_log_id TEXT,
    payload JSONB NOT NULL, recorded_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT events_stream_version UNIQUE (user_id, version)
);
CREATE INDEX IF NOT EXISTS events_fact_id ON {s}.events (fact_id);
CREATE INDEX IF NOT EXISTS events_audit_log_id ON {s}.events (audit_log_id);
CREATE INDEX IF NOT EXISTS events_reviews ON {s}.events (seq) WHERE {reviews};
CREATE TABLE IF NOT EXISTS {s}.streams (user_id TEXT PRIMARY KEY, version BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.idempotency (user_id TEXT NOT NULL, key TEXT NOT NULL,
    first_seq BIGINT NOT NULL, last_seq BIGINT NOT NULL, PRIMARY KEY (user_id, key));
CREATE TABLE IF NOT EXISTS {s}.subject_salts (user_id TEXT PRIMARY KEY, salt BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.erasures (
    erasure_id TEXT PRIMARY KEY, at TEXT NOT NULL, subject_digest TEXT NOT NULL,
    events BIGINT NOT NULL, digest TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.erasure_order (erasure_id TEXT PRIMARY KEY,
    purges BIGINT NOT NULL);
"""
    + PURGES_ROW
)
"""The purge count's row is made with the store: an append checks it ``FOR SHARE`` before the
first purge made it, and a check that locked no row would let that purge through."""


class PostgresEventStore(PgAdapter):
    """The event log in one PostgreSQL schema; see the module docstring for the guarantees."""

    what = "event store"

    def __init__(
        self, dsn: str, *, schema: str = "memkg", connect_timeout: int = 10,
        vacuum: Vacuum = "vacuum", lock_timeout: float = 30.0,
    ) -> None:  # fmt: skip
        super().__init__(dsn, schema=schema, connect_timeout=connect_timeout,
                         lock_timeout=lock_timeout)  # fmt: skip
        self._log_lock = lock_key(f"memkg.log:{schema}")
        self.vacuum_mode: Vacuum = vacuum
        """What runs after an erasure commits (``EngineConfig.erase_vacuum``)."""
        self._touched: list[str] | None = None
        """Inside ``erasing``: the tables the block deleted from (vacuumed once it committed);
        None outside."""
        with self._tx() as db:
            self._create(db, _SCHEMA.replace("{reviews}", REVIEWS_WHERE))
            db.execute(
                f"INSERT INTO {self._s}.meta VALUES ('schema_version', %s), ('subject_key', %s)"
                " ON CONFLICT DO NOTHING",
                (str(SCHEMA_VERSION), os.urandom(32).hex()),
            )
            meta = dict(db.execute(f"SELECT key, value FROM {self._s}.meta").fetchall())
            (found,) = db.execute(  # locked: of processes opening an older schema, one scopes
                f"SELECT value FROM {self._s}.meta WHERE key = 'schema_version' FOR UPDATE"
            ).fetchone() or ("0",)
            if 0 < int(found) < SCHEMA_VERSION:
                for statement in _SCOPED_KEYS:
                    db.execute(statement.replace("{s}", self._s))
                db.execute(f"UPDATE {self._s}.meta SET value = %s WHERE key = 'schema_version'",
                           (str(SCHEMA_VERSION),))  # fmt: skip
        if int(meta["schema_version"]) > SCHEMA_VERSION:
            self.close()
            raise StoreError(
                f"schema {schema!r} holds event store schema {meta['schema_version']}, newer "
                f"than this memkg understands ({SCHEMA_VERSION}): upgrade memkg"
            )
        self._secret = bytes.fromhex(meta["subject_key"])

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
        rows = [_row(e) for e in events]
        s = self._s
        with self._tx() as db:
            version = self._locked_stream(db, user_id, expected_version)
            if idempotency_key is not None:
                seen = db.execute(
                    f"SELECT first_seq, last_seq FROM {s}.idempotency"
                    " WHERE user_id = %s AND key = %s",
                    (user_id, idempotency_key),
                ).fetchone()
                if seen is not None:
                    found = db.execute(
                        f"SELECT {_COLUMNS} FROM {s}.events"
                        " WHERE user_id = %s AND seq BETWEEN %s AND %s ORDER BY seq",
                        (user_id, *seen),
                    ).fetchall()
                    if found and found[0][0] == seen[0]:
                        return AppendResult(events=tuple(map(_event, found)), duplicate=True)
                    # the write it stood for was purged: the key is free again
                    db.execute(
                        f"DELETE FROM {s}.idempotency WHERE user_id = %s AND key = %s",
                        (user_id, idempotency_key),
                    )
            if expected_purges is not None:
                self._check_purges(db, user_id, expected_purges)
            if expected_version is not None and expected_version != version:
                raise ConcurrencyConflict(user_id, expected_version, version)
            if not rows:
                return AppendResult(events=())
            db.execute("SELECT pg_advisory_xact_lock(%s)", (self._log_lock,))
            numbered = [(r[0], user_id, version + i, *r[1:]) for i, r in enumerate(rows, 1)]
            cursor = db.cursor()
            try:
                cursor.executemany(_INSERT.format(s=s), numbered, returning=True)
            except self._psycopg.errors.UniqueViolation as exc:
                if exc.diag.constraint_name != "events_stream_version":
                    raise
                # Only a writer that bypassed the stream lock gets here: it took version + 1.
                expected = version if expected_version is None else expected_version
                raise ConcurrencyConflict(user_id, expected, version + 1) from exc
            stored_rows = cursor.fetchall()
            while cursor.nextset():
                stored_rows += cursor.fetchall()
            stored_rows.sort(key=lambda r: r[3])
            stream = (version + len(rows), user_id)
            db.execute(f"UPDATE {s}.streams SET version = %s WHERE user_id = %s", stream)
            if idempotency_key is not None:
                db.execute(
                    f"INSERT INTO {s}.idempotency VALUES (%s, %s, %s, %s)",
                    (user_id, idempotency_key, stored_rows[0][0], stored_rows[-1][0]),
                )
        return AppendResult(events=tuple(map(_event, stored_rows)))

    def _check_purges(
        self, db: psycopg.Connection[tuple[Any, ...]], user_id: str, expected: int
    ) -> None:
        """``purged_meanwhile`` unless the purge count is still ``expected``, its row locked
        ``FOR SHARE`` to the end of the append (a purge or erasure locks it first: it waits
        for the append, or the append sees its count). The append holds the user's stream
        row, which an erasure may wait for while it holds the count: a purge or erasure under
        way refuses the append at once (``NOWAIT``) rather than deadlock; it is retried."""
        from psycopg.errors import LockNotAvailable

        try:
            with db.transaction():  # a savepoint: the refused lock undoes only itself
                purges = held_purges(db, self._s, wait=False)
        except LockNotAvailable:
            purges = expected + 1  # the purge under way will have counted itself
        if purges != expected:
            raise purged_meanwhile(user_id, expected, purges)

    def _locked_stream(
        self, db: psycopg.Connection[tuple[Any, ...]], user_id: str, expected: int | None
    ) -> int:
        """Lock the user's ``streams`` row (made at version 0 if missing); its version.

        An erasure may delete the row while this waits for its lock: the ``FOR UPDATE`` then
        finds no row. The user starts a new stream: an append that expected a version meets
        ``ConcurrencyConflict`` (an unconditional write is computed again on the fresh,
        erased state); one that expected none takes the new stream.
        """
        s = self._s
        for _ in range(_RELOCKS):
            db.execute(f"INSERT INTO {s}.streams VALUES (%s, 0) ON CONFLICT DO NOTHING", (user_id,))
            row = db.execute(
                f"SELECT version FROM {s}.streams WHERE user_id = %s FOR UPDATE", (user_id,)
            ).fetchone()
            if row is not None:
                return int(row[0])
            if expected is not None:
                raise ConcurrencyConflict(user_id, expected, 0)
        raise ConcurrencyConflict(  # erased each time it was about to be locked
            user_id, 0, 0, message=f"stream {user_id!r} was erased {_RELOCKS} times while "
            "this append waited for it: try again",
        )  # fmt: skip

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> list[Event]:
        query = (f"SELECT {_COLUMNS} FROM {self._s}.events"
                 " WHERE user_id = %s AND version > %s AND seq <= %s ORDER BY version")  # fmt: skip
        limit = _MAX_SEQ if up_to_seq is None else up_to_seq
        return list(map(_event, self._read(query, (user_id, after_version, limit))))

    def read_reviews(self, *, after_seq: int = 0, review_id: str | None = None) -> Iterator[Event]:
        # one review's by the fact-id index; the others' by the partial index of the reviews
        one, more = ("fact_id = %s AND ", (review_id,)) if review_id is not None else ("", ())
        while True:
            rows = self._read(
                f"SELECT {_COLUMNS} FROM {self._s}.events WHERE {one}{REVIEWS_WHERE}"
                " AND seq > %s ORDER BY seq LIMIT %s",
                (*more, after_seq, _BATCH),
            )
            if not rows:
                return
            yield from map(_event, rows)
            after_seq = rows[-1][0]

    def read_all(self, *, after_seq: int = 0, up_to_seq: int | None = None) -> Iterator[Event]:
        limit = _MAX_SEQ if up_to_seq is None else up_to_seq
        while True:
            rows = self._read(
                f"SELECT {_COLUMNS} FROM {self._s}.events"
                " WHERE seq > %s AND seq <= %s ORDER BY seq LIMIT %s",
                (after_seq, limit, _BATCH),
            )
            if not rows:
                return
            yield from map(_event, rows)
            after_seq = rows[-1][0]

    def read_all_by_user(self) -> Iterator[Event]:
        """The log user after user, each user's in stream order (what a rebuild folds to hold
        one user's memory at a time), read along the ``(user_id, version)`` index."""
        after: tuple[str, int] = ("", 0)
        while True:
            rows = self._read(
                f"SELECT {_COLUMNS} FROM {self._s}.events WHERE (user_id, version) > (%s, %s)"
                " ORDER BY user_id, version LIMIT %s",
                (*after, _BATCH),
            )
            if not rows:
                return
            events = list(map(_event, rows))
            yield from events
            after = (events[-1].user_id, events[-1].version)

    def stream_version(self, user_id: str) -> int:
        rows = self._read(f"SELECT version FROM {self._s}.streams WHERE user_id = %s", (user_id,))
        return int(rows[0][0]) if rows else 0

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        row = self._read(_MARK.format(s=self._s), (user_id,))[0]
        return int(row[0] or 0), int(row[1] or 0)

    def head(self) -> int:
        return int(self._read(f"SELECT coalesce(max(seq), 0) FROM {self._s}.events", ())[0][0])

    def purges(self) -> int:
        query = f"SELECT value FROM {self._s}.meta WHERE key = 'purges'"
        return int(next(iter(self._read(query, ())), ("0",))[0])

    def users(self) -> list[str]:
        query = f"SELECT user_id FROM {self._s}.streams WHERE version > 0 ORDER BY user_id"
        return [r[0] for r in self._read(query, ())]

    def users_in(self, domain: str) -> list[str]:
        query = f"SELECT DISTINCT user_id FROM {self._s}.events WHERE domain = %s ORDER BY user_id"
        return [r[0] for r in self._read(query, (domain,))]

    def subject_salt(self, user_id: str) -> bytes:
        query = f"SELECT salt FROM {self._s}.subject_salts WHERE user_id = %s"
        rows = self._read(query, (user_id,))
        if rows:
            return bytes(rows[0][0])
        # one statement: it makes the salt or locks the one another process just made, so
        # an erasure of the user cannot remove it between an insert and a select
        upsert = (
            f"INSERT INTO {self._s}.subject_salts VALUES (%s, %s) ON CONFLICT (user_id)"
            " DO UPDATE SET salt = subject_salts.salt RETURNING salt"
        )
        with self._tx() as db:
            return bytes(_one(db.execute(upsert, (user_id, os.urandom(16)))))

    def fact_ids_with_audit_id(self, audit_log_id: str) -> dict[str, list[str]]:
        where = "audit_log_id = %s AND fact_id IS NOT NULL"
        query = f"SELECT user_id, fact_id FROM {self._s}.events WHERE {where} ORDER BY seq"
        return group_fact_ids(self._read(query, (audit_log_id,)))

    def purge_facts(
        self, user_id: str, fact_ids: Sequence[str], *, companions: Sequence[Companion] = ()
    ) -> ErasureCounts:
        check_companions(self.database, companions)
        with self._tx() as db:
            db.execute(
                _PURGED.format(s=self._s)
            )  # counted first: its row is locked before any read
            others = tuple(c.erase_rows(db, user_id) for c in companions)
            removed = db.execute(
                f"DELETE FROM {self._s}.events WHERE user_id = %s AND fact_id = ANY(%s)"
                " RETURNING seq, event_id",
                (user_id, list(fact_ids)),
            ).fetchall()
            keys = db.execute(  # a key goes with the write it stood for
                f"DELETE FROM {self._s}.idempotency WHERE user_id = %s AND first_seq = ANY(%s)",
                (user_id, [r[0] for r in removed]),
            ).rowcount
        if removed or any(others):
            self._vacuumed([*_PURGES, *(t for c in companions for t in c.tables)])
        return purge_counts(removed, keys, others)

    def erase_subject(
        self, user_id: str, *, erasure_id: str, at_iso: str,
        companions: Sequence[Companion] = (),
    ) -> ErasureCounts:  # fmt: skip
        check_companions(self.database, companions)
        s = self._s
        with self._tx() as db:
            db.execute(f"SELECT 1 FROM {s}.streams WHERE user_id = %s FOR UPDATE", (user_id,))
            db.execute(_PURGED.format(s=s))  # counted first: its row is locked before any read
            others = tuple(c.erase_rows(db, user_id) for c in companions)
            removed = db.execute(
                f"DELETE FROM {s}.events WHERE user_id = %s RETURNING seq, event_id", (user_id,)
            ).fetchall()
            salts = db.execute(f"DELETE FROM {s}.subject_salts WHERE user_id = %s", (user_id,))
            keys = db.execute(f"DELETE FROM {s}.idempotency WHERE user_id = %s", (user_id,))
            counts = salts.rowcount, keys.rowcount
            db.execute(f"DELETE FROM {s}.streams WHERE user_id = %s", (user_id,))
            digest = removal_digest(r[1] for r in sorted(removed))
            db.execute(
                f"INSERT INTO {s}.erasures VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (erasure_id, at_iso, subject_digest(self._secret, user_id), len(removed), digest),
            )
            db.execute(  # the purge count this erasure set: what orders it (``was_erased``)
                f"INSERT INTO {s}.erasure_order SELECT %s, value::bigint FROM {s}.meta"
                " WHERE key = 'purges' ON CONFLICT DO NOTHING",
                (erasure_id,),
            )
        self._vacuumed([*_ERASED, *(t for c in companions for t in c.tables)])
        return ErasureCounts(
            events=len(removed), salts=counts[0], idempotency_keys=counts[1], digest=digest,
            companions=others,
        )  # fmt: skip

    @contextmanager
    def erasing(self, streams: Collection[str] = ()) -> Iterator[None]:
        """One transaction for the erasures and purges of the block; the tables they touched
        are vacuumed once, after it committed (contract item 8). ``streams``, the users the
        block erases, are locked first, in one (sorted) order: an erasure of merged ids takes
        the purge count after its first id, so two erasures of one person that locked their
        ids as they reached them, from two ids, deadlocked."""
        with self._lock:
            if self._touched is not None:  # nested: the outer block commits and vacuums
                yield
                return
            self._touched = []
            try:
                with self._tx() as db:
                    for user_id in sorted(set(streams)):
                        db.execute(
                            f"SELECT 1 FROM {self._s}.streams WHERE user_id = %s FOR UPDATE",
                            (user_id,),
                        )
                    db.execute(_PURGES_HELD.format(s=self._s))
                    yield
            finally:
                touched, self._touched = self._touched, None
            self._vacuumed(touched)

    def _vacuumed(self, tables: Sequence[str]) -> None:
        """After an erasure or purge committed: vacuum its tables as ``vacuum_mode`` says
        (inside ``erasing``: noted, and vacuumed with the others once the block committed)."""
        if self._touched is not None:
            self._touched.extend(tables)
        elif tables and self.vacuum_mode != "off":
            self.vacuum(tables, full=self.vacuum_mode == "full")

    def vacuum(self, tables: Sequence[str] = (), *, full: bool = False) -> list[str]:
        """``VACUUM`` (``FULL``: rewrite) these tables of the schema (default: every table
        memkg keeps there), so deleted rows leave them; returns the tables vacuumed.

        Not inside an open transaction (a ``batch``): VACUUM cannot run there, so it is left
        to the next erasure or to the operator. ``FULL`` holds an exclusive lock on each
        table while it is rewritten: writers and readers of that table wait.
        """
        from psycopg import sql

        present = set(self._tables())  # a companion's table may not be made yet
        names = [t for t in dict.fromkeys(tables) if t in present] if tables else sorted(present)
        command = sql.SQL("VACUUM (FULL) {}.{}" if full else "VACUUM {}.{}")
        with self._lock:
            try:
                db = self._connection()
                if db.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                    return []
                db.execute("SET lock_timeout = 0")  # an erasure's rewrite waits its turn
                try:
                    for name in names:
                        db.execute(command.format(sql.Identifier(self._schema),
                                                  sql.Identifier(name)))  # fmt: skip
                finally:
                    db.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")
            except self._psycopg.Error as exc:
                raise StoreError(f"event store {self._schema!r}: VACUUM failed: {exc}") from exc
        return names

    def _tables(self) -> list[str]:
        query = "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename"
        return [r[0] for r in self._read(query, (self._schema,))]

    def was_erased(self, user_id: str, after: int | None = None) -> bool:
        """Whether a tombstone records this user's erasure (counted past ``after``)."""
        digest = subject_digest(self._secret, user_id)
        if after is None:
            query = f"SELECT 1 FROM {self._s}.erasures WHERE subject_digest = %s"
            return bool(self._read(query, (digest,)))
        query = (f"SELECT 1 FROM {self._s}.erasures JOIN {self._s}.erasure_order"
                 " USING (erasure_id) WHERE subject_digest = %s AND purges > %s")  # fmt: skip
        return bool(self._read(query, (digest, after)))

    def files(self) -> list[Path]:
        return []

    @contextmanager
    def batch(self, streams: Collection[str] = ()) -> Iterator[None]:
        # Appends inside open nested transactions: psycopg makes them savepoints.
        with self._tx() as db:
            # Every writer locks stream rows before the log's advisory lock, never one while
            # holding the other: the block's rows are locked first, in one (sorted) order,
            # since its first append takes the advisory lock until the block commits.
            for user_id in sorted(set(streams)):
                self._locked_stream(db, user_id, None)
            yield


def _row(e: NewEvent) -> tuple[Any, ...]:
    at = utc_instant(e.recorded_at)
    # jsonb keeps numbers as numeric, which forgets an exponent: spelled out, a float reads
    # back as the same float (``jsonb_exact``)
    payload = jsonb_exact(payload_json(e))
    return (e.event_id, e.type.value, e.domain, e.fact_id, e.audit_log_id, payload, at)


def _one(cursor: psycopg.Cursor[tuple[Any, ...]]) -> Any:
    row = cursor.fetchone()
    if row is None:
        raise StoreError("event store: a row vanished inside its own transaction")
    return row[0]


def _event(row: Any) -> Event:
    return stored_event(*row)
