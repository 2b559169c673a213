"""``PostgresVectorStore``: memory vectors in the PostgreSQL schema that holds the events.

pgvector is not packaged for the PostgreSQL this is built on (Debian 12 has no
``postgresql-15-pgvector``), so vectors are ``bytea`` (float32) rows and cosine is computed in
the process over the user's rows, as on SQLite: recall scores every candidate of one user, so
an approximate index across users would buy nothing. The table is made on the first write.
Erasure deletes the rows in one statement; as for the event store, dead tuples stay until
``VACUUM`` (the operator's job).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkg.postgres import PURGES_ROW, PgAdapter, still_held
from memkg.semantic.store import cosine, pack, unpack

if TYPE_CHECKING:
    import psycopg

_SCHEMA = (
    """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.vectors (user_id TEXT NOT NULL, model TEXT NOT NULL,
    digest TEXT NOT NULL, vector BYTEA NOT NULL, PRIMARY KEY (user_id, model, digest));
"""
    + PURGES_ROW
)


class PostgresVectorStore(PgAdapter):
    """Vectors in ``schema`` (the event store's), shared by every engine process using it."""

    what = "vector store"

    def __init__(self, dsn: str, *, schema: str = "memkg", connect_timeout: int = 10) -> None:
        super().__init__(dsn, schema=schema, connect_timeout=connect_timeout)
        self._ready = False

    def get(self, user_id: str, model: str, digests: Collection[str]) -> dict[str, list[float]]:
        if not self._table():
            return {}
        rows = self._read(
            f"SELECT digest, vector FROM {self._s}.vectors"
            " WHERE user_id = %s AND model = %s AND digest = ANY(%s)",
            (user_id, model, sorted(set(digests))),
        )
        return {digest: unpack(bytes(blob)) for digest, blob in rows}

    def put(
        self, user_id: str, model: str, vectors: Mapping[str, Sequence[float]], seen: int
    ) -> bool:
        rows = [(user_id, model, d, pack(v)) for d, v in vectors.items()]
        if not rows:
            return True
        with self._tx() as db, db.cursor() as cursor:
            if not self._ready:
                self._create(db, _SCHEMA)
            if not still_held(db, self._s, user_id, seen):
                return False
            cursor.executemany(
                f"INSERT INTO {self._s}.vectors VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                rows,
            )
        self._ready = True
        return True

    def similarities(
        self, user_id: str, model: str, query: Sequence[float], digests: Collection[str]
    ) -> dict[str, float]:
        return {d: cosine(query, v) for d, v in self.get(user_id, model, digests).items()}

    tables = ("vectors",)

    def erase_rows(self, db: psycopg.Connection[tuple[Any, ...]], user_id: str) -> int:
        """The user's vectors, removed through the event store's open erasure transaction."""
        found = db.execute("SELECT to_regclass(%s)", (f"{self._s}.vectors",)).fetchone()
        if found is None or found[0] is None:
            return 0
        query = f"DELETE FROM {self._s}.vectors WHERE user_id = %s"
        return int(db.execute(query, (user_id,)).rowcount)

    def erase_user(self, user_id: str) -> int:
        if not self._table():
            return 0
        with self._tx() as db:
            done = db.execute(f"DELETE FROM {self._s}.vectors WHERE user_id = %s", (user_id,))
            return int(done.rowcount)

    def count(self, user_id: str) -> int:
        if not self._table():
            return 0
        rows = self._read(f"SELECT count(*) FROM {self._s}.vectors WHERE user_id = %s", (user_id,))
        return int(rows[0][0])

    def files(self) -> list[Path]:
        return []

    def _table(self) -> bool:
        """Whether the table exists: it is made on the first write, so an engine that never
        embedded leaves the schema as it was."""
        if not self._ready:
            found = self._read("SELECT to_regclass(%s)", (f"{self._s}.vectors",))
            self._ready = found[0][0] is not None
        return self._ready
