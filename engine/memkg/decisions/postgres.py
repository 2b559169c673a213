"""``PostgresDecisionLog``: decisions in PostgreSQL, next to the event store of the same schema.

Records are JSONB, which does not keep key order, nor a number's exponent: a number written
with one is spelled out in plain decimals first (``postgres.jsonb_exact``), so ``get`` returns
a decision equal to the one appended, floats as floats, though not its original JSON text.
``seq`` keeps the order of appends for ``for_user``.

A checked append (``append_checked``) locks the log's purge count (the ``meta`` row
``purges``) ``FOR SHARE`` and writes only if it is the count the decision read memory at;
every erasure locks that row ``FOR UPDATE`` before it deletes decisions, so either the
erasure commits first and the append sees its count, or the append commits first and the
erasure's delete sees its row.

Erasure deletes rows in one statement. As for the event store, PostgreSQL keeps dead tuples
until the table is vacuumed, and its WAL, replicas and backups still hold the deleted rows:
running ``VACUUM``, expiring WAL archives and backups is the operator's responsibility.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkg.decisions.log import ROWS_MAX, Citing, duplicate, not_found, not_listed
from memkg.errors import StoreError
from memkg.model.decision import Decision
from memkg.postgres import PURGES_ROW, PgAdapter, held_purges, jsonb_exact

if TYPE_CHECKING:
    import psycopg

SCHEMA_VERSION = 1
_SCHEMA = (
    """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.decisions (
    decision_id TEXT PRIMARY KEY, seq BIGSERIAL NOT NULL, user_id TEXT NOT NULL,
    domain TEXT NOT NULL, decided_at TIMESTAMPTZ NOT NULL, record JSONB NOT NULL);
CREATE INDEX IF NOT EXISTS decisions_user_seq ON {s}.decisions (user_id, seq);
CREATE TABLE IF NOT EXISTS {s}.rule_bundles (digest TEXT PRIMARY KEY, sources JSONB NOT NULL);
"""
    + PURGES_ROW
)
_ERASING = "SELECT 1 FROM {s}.meta WHERE key = 'purges' FOR UPDATE"
_INSERT = (
    "INSERT INTO {s}.decisions (decision_id, user_id, domain, decided_at, record)"
    " VALUES (%s, %s, %s, %s, %s::jsonb) ON CONFLICT DO NOTHING"
)
_CANDIDATES = (
    "SELECT decision_id, record::text FROM {s}.decisions WHERE user_id = %s AND EXISTS"
    " (SELECT 1 FROM jsonb_array_elements_text(%s::jsonb) AS n(needle)"
    " WHERE strpos(record::text, needle) > 0)"
)
_REMOVE = (
    "DELETE FROM {s}.decisions WHERE decision_id IN (SELECT jsonb_array_elements_text(%s::jsonb))"
)


class PostgresDecisionLog(PgAdapter):
    """The decision log in one PostgreSQL schema, shared by every engine process using it."""

    what = "decision log"

    def __init__(self, dsn: str, *, schema: str = "memkg", connect_timeout: int = 10) -> None:
        super().__init__(dsn, schema=schema, connect_timeout=connect_timeout)
        with self._tx() as db:
            self._create(db, _SCHEMA)
            db.execute(
                f"INSERT INTO {self._s}.meta VALUES ('decision_log_version', %s)"
                " ON CONFLICT DO NOTHING",
                (str(SCHEMA_VERSION),),
            )
            row = db.execute(
                f"SELECT value FROM {self._s}.meta WHERE key = 'decision_log_version'"
            ).fetchone()
        version = int(row[0]) if row else SCHEMA_VERSION
        if version > SCHEMA_VERSION:
            self.close()
            raise StoreError(
                f"schema {schema!r} holds decision log schema {version}, newer than this memkg"
                f" understands ({SCHEMA_VERSION}): upgrade memkg"
            )

    def append(self, decision: Decision) -> None:
        self._insert(decision, None)

    def append_checked(self, decision: Decision, purges: int) -> bool:
        """Log ``decision`` only while the event log of this schema has counted ``purges``
        purges and erasures, checked in the insert's transaction; whether it was logged."""
        return self._insert(decision, purges)

    def _insert(self, decision: Decision, purges: int | None) -> bool:
        row = (
            decision.decision_id,
            decision.request.user_id,
            decision.request.domain,
            decision.decided_at,
            jsonb_exact(decision.model_dump_json()),
        )
        with self._tx() as db:
            if purges is not None and held_purges(db, self._s) != purges:
                return False
            if db.execute(_INSERT.format(s=self._s), row).rowcount == 0:
                raise duplicate(decision.decision_id)
        return True

    def get(self, decision_id: str) -> Decision:
        query = f"SELECT record::text FROM {self._s}.decisions WHERE decision_id = %s"
        rows = self._read(query, (decision_id,))
        if not rows:
            raise not_found(decision_id)
        return Decision.model_validate_json(rows[0][0])

    def for_user(
        self, user_id: str, *, limit: int | None = None, domains: Collection[str] | None = None,
        before: str | None = None,
    ) -> list[Decision]:  # fmt: skip
        where = "user_id = %s"
        args: list[Any] = [user_id]
        if domains is not None:
            where += " AND domain = ANY(%s::text[])"
            args.append(sorted(domains))
        if before is not None:
            found = self._read(
                f"SELECT seq FROM {self._s}.decisions WHERE decision_id = %s AND {where}",
                (before, *args),
            )
            if not found:
                raise not_listed(before, user_id, domains)
            where += " AND seq < %s"
            args.append(found[0][0])
        query = (
            f"SELECT record::text FROM (SELECT seq, record FROM {self._s}.decisions"
            f" WHERE {where} ORDER BY seq DESC LIMIT %s) AS last ORDER BY seq"
        )
        # a limit past what a bigint holds is past every count: all of them
        rows = self._read(query, (*args, limit if limit and limit <= ROWS_MAX else None))
        return [Decision.model_validate_json(r[0]) for r in rows]

    def recent(self, limit: int) -> list[Decision]:
        if limit <= 0:
            return []
        query = (
            f"SELECT record::text FROM (SELECT seq, record FROM {self._s}.decisions"
            " ORDER BY seq DESC LIMIT %s) AS last ORDER BY seq"
        )
        rows = self._read(query, (min(limit, ROWS_MAX),))
        return [Decision.model_validate_json(r[0]) for r in rows]

    def save_bundle(self, digest: str, sources: dict[str, str]) -> None:
        with self._tx() as db:
            db.execute(
                f"INSERT INTO {self._s}.rule_bundles VALUES (%s, %s::jsonb) ON CONFLICT DO NOTHING",
                (digest, json.dumps(sources)),
            )

    def bundle(self, digest: str) -> dict[str, str] | None:
        query = f"SELECT sources::text FROM {self._s}.rule_bundles WHERE digest = %s"
        rows = self._read(query, (digest,))
        return dict(json.loads(rows[0][0])) if rows else None

    tables = ("decisions",)

    def remove(self, decision_id: str) -> bool:
        with self._tx() as db:
            query = f"DELETE FROM {self._s}.decisions WHERE decision_id = %s"
            return bool(db.execute(query, (decision_id,)).rowcount)

    def erase_rows(self, db: psycopg.Connection[tuple[Any, ...]], user_id: str) -> int:
        """The user's decisions, removed through the event store's open transaction (after
        locking the purge count: a checked append waits, then sees the erasure's count)."""
        db.execute(_ERASING.format(s=self._s))
        query = f"DELETE FROM {self._s}.decisions WHERE user_id = %s"
        return db.execute(query, (user_id,)).rowcount

    def erase_user(self, user_id: str) -> int:
        with self._tx() as db:
            return self.erase_rows(db, user_id)

    def citing(self, fact_ids: Collection[str], merged_ids: Collection[str] = ()) -> Citing:
        """The decisions citing ``fact_ids`` or naming ``merged_ids``, as a companion that
        removes a user's inside the event store's erasure transaction."""
        find, remove = _CANDIDATES.format(s=self._s), _REMOVE.format(s=self._s)
        return Citing(self.database, find, remove, tuple(fact_ids), tuple(merged_ids),
                      lock=_ERASING.format(s=self._s))  # fmt: skip

    def erase_citing(
        self, user_id: str, fact_ids: Collection[str], *, merged_ids: Collection[str] = ()
    ) -> int:
        with self._tx() as db:
            return self.citing(fact_ids, merged_ids).erase_rows(db, user_id)

    def files(self) -> list[Path]:
        return []
