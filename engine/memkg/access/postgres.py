"""``PostgresAccessStore``: keys, grants and the access audit in the memory's PostgreSQL schema."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

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
from memkg.postgres import PgAdapter

if TYPE_CHECKING:
    import psycopg

_TARGET = "(body::jsonb ->> 'target')"
"""A record's target (a decision, a merged id), as the index on it and every query spell it."""
_SCHEMA = (
    """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.access_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.access_keys (key_id TEXT PRIMARY KEY, digest TEXT NOT NULL,
    user_id TEXT, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.access_grants (grant_id TEXT PRIMARY KEY, key_id TEXT NOT NULL,
    user_id TEXT, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.access_audit (seq BIGSERIAL PRIMARY KEY, key_id TEXT NOT NULL,
    subject TEXT, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS access_audit_subject ON {s}.access_audit (subject);
CREATE INDEX IF NOT EXISTS access_audit_key ON {s}.access_audit (key_id);
CREATE INDEX IF NOT EXISTS access_audit_target ON {s}.access_audit """
    + f"({_TARGET})"
)


class PostgresAccessStore(PgAdapter):
    what = "access store"
    read_only = False

    def __init__(self, dsn: str, *, schema: str = "memkg", connect_timeout: int = 10) -> None:
        super().__init__(dsn, schema=schema, connect_timeout=connect_timeout)
        import secrets

        with self._tx() as db:
            indexed = db.execute(f"SELECT to_regclass('{self._s}.access_audit_target')")
            new_index = indexed.fetchone() == (None,)
            self._create(db, _SCHEMA)
            if new_index:  # an audit kept before the index: the planner learns of it now,
                # not after autovacuum's next look (until then, a read by target ordered by
                # seq walked the whole table backwards)
                db.execute(f"ANALYZE {self._s}.access_audit")
            db.execute(f"INSERT INTO {self._s}.access_meta VALUES ('subject_key', %s)"
                       " ON CONFLICT DO NOTHING", (secrets.token_hex(32),))  # fmt: skip
            row = db.execute(f"SELECT value FROM {self._s}.access_meta WHERE key = 'subject_key'")
            found = row.fetchone()
        assert found is not None
        self._secret = bytes.fromhex(found[0])

    def add_key(self, key: ApiKey, digest: str) -> None:
        with self._tx() as db:
            db.execute(f"INSERT INTO {self._s}.access_keys VALUES (%s, %s, %s, %s)",
                       (key.key_id, digest, key.user_id, key.model_dump_json()))  # fmt: skip

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        rows = self._read(f"SELECT body, digest FROM {self._s}.access_keys WHERE key_id = %s",
                          (key_id,))  # fmt: skip
        return (ApiKey.model_validate_json(rows[0][0]), rows[0][1]) if rows else None

    def keys(self) -> list[ApiKey]:
        rows = self._read(f"SELECT body FROM {self._s}.access_keys ORDER BY key_id", ())
        return [ApiKey.model_validate_json(r[0]) for r in rows]

    def revoke_key(self, key_id: str, at: datetime) -> ApiKey | None:
        with self._tx() as db:
            row = db.execute(f"SELECT body FROM {self._s}.access_keys WHERE key_id = %s"
                             " FOR UPDATE", (key_id,)).fetchone()  # fmt: skip
            if row is None:
                return None
            key = revoked_key(ApiKey.model_validate_json(row[0]), at)
            db.execute(f"UPDATE {self._s}.access_keys SET body = %s WHERE key_id = %s",
                       (key.model_dump_json(), key_id))  # fmt: skip
            return key

    def add_grant(self, grant: Grant) -> None:
        with self._tx() as db:
            db.execute(f"INSERT INTO {self._s}.access_grants VALUES (%s, %s, %s, %s)",
                       (grant.grant_id, grant.key_id, grant.user_id,
                        grant.model_dump_json()))  # fmt: skip

    def grants(self, key_id: str | None = None) -> list[Grant]:
        rows = self._read(
            f"SELECT body FROM {self._s}.access_grants WHERE %s::text IS NULL OR key_id = %s"
            " ORDER BY grant_id",
            (key_id, key_id),
        )
        return [Grant.model_validate_json(r[0]) for r in rows]

    def revoke_grant(self, grant_id: str, at: datetime) -> Grant | None:
        with self._tx() as db:
            row = db.execute(f"SELECT body FROM {self._s}.access_grants WHERE grant_id = %s"
                             " FOR UPDATE", (grant_id,)).fetchone()  # fmt: skip
            if row is None:
                return None
            grant = revoked_grant(Grant.model_validate_json(row[0]), at)
            db.execute(f"UPDATE {self._s}.access_grants SET body = %s WHERE grant_id = %s",
                       (grant.model_dump_json(), grant_id))  # fmt: skip
            return grant

    def record(self, records: Sequence[AccessRecord]) -> None:
        rows = [(r.key_id, r.subject, r.model_dump_json(exclude={"position"})) for r in records]
        with self._tx() as db, db.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {self._s}.access_audit (key_id, subject, body)"
                               " VALUES (%s, %s, %s)", rows)  # fmt: skip

    def records(
        self, *, subject: str | None = None, key_id: str | None = None,
        target: str | None = None, limit: int = 100, before: int | None = None,
    ) -> list[AccessRecord]:  # fmt: skip
        where, given = audit_filter(subject, key_id, target, "%s", _TARGET)
        args: tuple[str | int, ...] = given
        if before is not None:
            where, args = f"{where} AND seq < %s", (*given, before)
        rows = self._read(
            f"SELECT seq, body FROM {self._s}.access_audit WHERE {where}"
            " ORDER BY seq DESC LIMIT %s",
            (*args, min(limit, AUDIT_LIMIT + 1)),
        )
        return [positioned(r[1], r[0]) for r in rows]

    tables = ("access_audit", "access_keys", "access_grants")

    def alias(self, user_id: str) -> str:
        return pseudonym(self._secret, user_id)

    def pseudonymise(self, user_id: str) -> int:
        with self._tx() as db:
            return self.erase_rows(db, user_id)

    def pseudonymise_records(self, user_id: str, record_ids: Collection[str]) -> int:
        alias = pseudonym(self._secret, user_id)
        with self._tx() as db:
            rows = db.execute(f"SELECT seq, body FROM {self._s}.access_audit WHERE subject = %s"
                              f" OR {_TARGET} = %s", (user_id, user_id)).fetchall()  # fmt: skip
            changed = aliased_rows(rows, user_id, record_ids, alias)
            with db.cursor() as cursor:
                cursor.executemany(f"UPDATE {self._s}.access_audit SET subject = %s, body = %s"
                                   " WHERE seq = %s", changed)  # fmt: skip
        return len(changed)

    def erase_rows(self, db: psycopg.Connection[tuple[Any, ...]], user_id: str) -> int:
        """Pseudonymise the user through ``db`` (the event store's open transaction)."""
        # a record inserted after this statement's snapshot, by a request whose erasure check
        # (``Gate.erased_since``) ran before this transaction commits, would keep the id in
        # the clear: records wait for the commit, then their check sees the erasure
        db.execute(f"LOCK TABLE {self._s}.access_audit IN SHARE ROW EXCLUSIVE MODE")
        alias = pseudonym(self._secret, user_id)
        changed = 0
        tables = (("access_audit", "subject", AccessRecord, "seq"),
                  ("access_keys", "user_id", ApiKey, "key_id"),
                  ("access_grants", "user_id", Grant, "grant_id"))  # fmt: skip
        for table, column, model, ident in tables:
            rows = db.execute(f"SELECT {ident}, body FROM {self._s}.{table}"
                              f" WHERE {column} = %s", (user_id,)).fetchall()  # fmt: skip
            for row_id, body in rows:
                value = model.model_validate_json(body).model_copy(update={column: alias})
                text = value.model_dump_json(exclude={"position"})
                db.execute(f"UPDATE {self._s}.{table} SET {column} = %s, body = %s"
                           f" WHERE {ident} = %s", (alias, text, row_id))  # fmt: skip
            changed += len(rows)
        # a merge's record names the other id as its target
        rows = db.execute(
            f"SELECT seq, body FROM {self._s}.access_audit WHERE {_TARGET} = %s",
            (user_id,),
        ).fetchall()
        for seq, body in rows:
            record = AccessRecord.model_validate_json(body).model_copy(update={"target": alias})
            db.execute(f"UPDATE {self._s}.access_audit SET body = %s WHERE seq = %s",
                       (record.model_dump_json(exclude={"position"}), seq))  # fmt: skip
        return changed + len(rows)
