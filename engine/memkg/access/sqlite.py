"""``SqliteAccessStore``: keys, grants and the access audit in the memory's SQLite file.

Rows hold the value as JSON plus the columns queries filter on. ``secure_delete`` is on, so a
pseudonymised subject id does not linger in freed pages.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from memkg.access.model import AccessRecord, ApiKey, Grant
from memkg.access.store import (
    AUDIT_LIMIT,
    aliased_rows,
    audit_filter,
    positioned,
    pseudonym,
    revoked_grant,
    revoked_key,
)
from memkg.errors import StoreError, sqlite_failure

_TARGET = "json_extract(body, '$.target')"
"""A record's target (a decision, a merged id), as the index on it and every query spell it."""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS access_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS access_keys (key_id TEXT PRIMARY KEY, digest TEXT NOT NULL,
    user_id TEXT, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS access_grants (grant_id TEXT PRIMARY KEY, key_id TEXT NOT NULL,
    user_id TEXT, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS access_audit (seq INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id TEXT NOT NULL, subject TEXT, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS access_audit_subject ON access_audit (subject);
CREATE INDEX IF NOT EXISTS access_audit_key ON access_audit (key_id);
CREATE INDEX IF NOT EXISTS access_audit_target ON access_audit ({_TARGET})
"""


class SqliteAccessStore:
    read_only: bool
    """A file this process may not write: keys and grants read, every write refused with
    ``store.read_only``."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            for pragma in ("synchronous = FULL", "secure_delete = ON"):
                self._db.execute(f"PRAGMA {pragma}")
            self.read_only = False
            try:
                with self._write() as db:
                    for statement in _SCHEMA.split(";"):
                        db.execute(statement)
                    db.execute("INSERT OR IGNORE INTO access_meta VALUES ('subject_key', ?)",
                               (os.urandom(32).hex(),))  # fmt: skip
                    self._secret = self._stored_secret()
            except StoreError as exc:
                if exc.code != "store.read_only":
                    raise
                self.read_only = True
                self._secret = self._stored_secret()
        except sqlite3.Error as exc:
            if "no such table" in str(exc):
                raise StoreError(
                    f"{self.path} is read-only and holds no API keys yet: make it writable "
                    "to create one",
                    code="store.read_only",
                ) from exc
            raise StoreError(f"cannot open the access store in {self.path}: {exc}") from exc

    def _stored_secret(self) -> bytes:
        row = self._db.execute("SELECT value FROM access_meta WHERE key = 'subject_key'")
        return bytes.fromhex(row.fetchone()[0])

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise sqlite_failure(exc, f"access store {self.path}") from exc

    def _read(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._db.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"access store {self.path}: {exc}") from exc

    def add_key(self, key: ApiKey, digest: str) -> None:
        with self._write() as db:
            db.execute("INSERT INTO access_keys VALUES (?, ?, ?, ?)",
                       (key.key_id, digest, key.user_id, key.model_dump_json()))  # fmt: skip

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        rows = self._read("SELECT body, digest FROM access_keys WHERE key_id = ?", (key_id,))
        return (ApiKey.model_validate_json(rows[0][0]), rows[0][1]) if rows else None

    def keys(self) -> list[ApiKey]:
        rows = self._read("SELECT body FROM access_keys ORDER BY key_id", ())
        return [ApiKey.model_validate_json(r[0]) for r in rows]

    def revoke_key(self, key_id: str, at: datetime) -> ApiKey | None:
        with self._write() as db:
            row = db.execute("SELECT body FROM access_keys WHERE key_id = ?", (key_id,)).fetchone()
            if row is None:
                return None
            key = revoked_key(ApiKey.model_validate_json(row[0]), at)
            db.execute("UPDATE access_keys SET body = ? WHERE key_id = ?",
                       (key.model_dump_json(), key_id))  # fmt: skip
            return key

    def add_grant(self, grant: Grant) -> None:
        with self._write() as db:
            db.execute("INSERT INTO access_grants VALUES (?, ?, ?, ?)",
                       (grant.grant_id, grant.key_id, grant.user_id,
                        grant.model_dump_json()))  # fmt: skip

    def grants(self, key_id: str | None = None) -> list[Grant]:
        if key_id is None:
            rows = self._read("SELECT body FROM access_grants ORDER BY grant_id", ())
        else:
            rows = self._read("SELECT body FROM access_grants WHERE key_id = ? ORDER BY grant_id",
                              (key_id,))  # fmt: skip
        return [Grant.model_validate_json(r[0]) for r in rows]

    def revoke_grant(self, grant_id: str, at: datetime) -> Grant | None:
        with self._write() as db:
            query = "SELECT body FROM access_grants WHERE grant_id = ?"
            row = db.execute(query, (grant_id,)).fetchone()
            if row is None:
                return None
            grant = revoked_grant(Grant.model_validate_json(row[0]), at)
            db.execute("UPDATE access_grants SET body = ? WHERE grant_id = ?",
                       (grant.model_dump_json(), grant_id))  # fmt: skip
            return grant

    def record(self, records: Sequence[AccessRecord]) -> None:
        rows = [(r.key_id, r.subject, r.model_dump_json(exclude={"position"})) for r in records]
        with self._write() as db:
            db.executemany("INSERT INTO access_audit (key_id, subject, body) VALUES (?, ?, ?)",
                           rows)  # fmt: skip

    def records(
        self, *, subject: str | None = None, key_id: str | None = None,
        target: str | None = None, limit: int = 100, before: int | None = None,
    ) -> list[AccessRecord]:  # fmt: skip
        where, given = audit_filter(subject, key_id, target, "?", _TARGET)
        args: tuple[str | int, ...] = given
        if before is not None:
            where, args = f"{where} AND seq < ?", (*given, before)
        rows = self._read(
            f"SELECT seq, body FROM access_audit WHERE {where} ORDER BY seq DESC LIMIT ?",
            (*args, min(limit, AUDIT_LIMIT + 1)),
        )
        return [positioned(r[1], r[0]) for r in rows]

    tables = ("access_audit", "access_keys", "access_grants")

    @property
    def database(self) -> str:
        """Where keys and audit live: beside the memory, an erasure rewrites them with it."""
        return f"sqlite:{self.path.resolve()}"

    def alias(self, user_id: str) -> str:
        return pseudonym(self._secret, user_id)

    def pseudonymise(self, user_id: str) -> int:
        with self._write() as db:
            return self.erase_rows(db, user_id)

    def erase_rows(self, db: sqlite3.Connection, user_id: str) -> int:
        """Pseudonymise the user through ``db`` (the event store's open transaction)."""
        alias = pseudonym(self._secret, user_id)
        changed = 0
        for table, column, model in (("access_audit", "subject", AccessRecord),
                                     ("access_keys", "user_id", ApiKey),
                                     ("access_grants", "user_id", Grant)):  # fmt: skip
            rows = db.execute(f"SELECT rowid, body FROM {table} WHERE {column} = ?",
                              (user_id,)).fetchall()  # fmt: skip
            field = "subject" if column == "subject" else "user_id"
            for rowid, body in rows:
                value = model.model_validate_json(body).model_copy(update={field: alias})
                db.execute(f"UPDATE {table} SET {column} = ?, body = ? WHERE rowid = ?",
                           (alias, value.model_dump_json(exclude={"position"}), rowid))  # fmt: skip
            changed += len(rows)
        # a merge's record names the other id as its target
        rows = db.execute(
            f"SELECT rowid, body FROM access_audit WHERE {_TARGET} = ?",
            (user_id,),
        ).fetchall()
        for rowid, body in rows:
            record = AccessRecord.model_validate_json(body).model_copy(update={"target": alias})
            db.execute("UPDATE access_audit SET body = ? WHERE rowid = ?",
                       (record.model_dump_json(exclude={"position"}), rowid))  # fmt: skip
        return changed + len(rows)

    def pseudonymise_records(self, user_id: str, record_ids: Collection[str]) -> int:
        alias = pseudonym(self._secret, user_id)
        with self._write() as db:
            rows = db.execute(f"SELECT seq, body FROM access_audit WHERE subject = ?"
                              f" OR {_TARGET} = ?", (user_id, user_id)).fetchall()  # fmt: skip
            changed = aliased_rows(rows, user_id, record_ids, alias)
            db.executemany("UPDATE access_audit SET subject = ?, body = ? WHERE seq = ?", changed)
        return len(changed)

    def close(self) -> None:
        with self._lock:
            self._db.close()
