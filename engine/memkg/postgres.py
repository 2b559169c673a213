"""What the PostgreSQL adapters share: one guarded connection to one schema.

The event store and the decision log both live in a schema of their own name, reached through
psycopg 3 (imported only when an adapter is created, so memkg imports without it).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

from memkg.errors import ConfigError, InvalidOperation, StoreError

if TYPE_CHECKING:
    import psycopg

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")

Vacuum = Literal["off", "vacuum", "full"]
"""What runs on the tables an erasure touched once it committed (``EngineConfig.erase_vacuum``)."""


PURGES_ROW = "INSERT INTO {s}.meta VALUES ('purges', '0') ON CONFLICT DO NOTHING"
"""The event log's purge count (every purge and erasure raises it), made at 0 if no purge made
it yet: what a trace or a decision written beside the events checks, and erasures lock."""


def check_schema(schema: str) -> None:
    """``ConfigError`` unless ``schema`` is a name memkg creates and reads a store under."""
    if not _IDENTIFIER.fullmatch(schema):
        raise ConfigError(f"schema name {schema!r} must match {_IDENTIFIER.pattern}")


def held_purges(db: Any, s: str, *, wait: bool = True) -> int:
    """The purge count of schema ``s`` (quoted), its row locked ``FOR SHARE`` until the
    transaction ends: an erasure (which locks it ``FOR UPDATE`` or raises it) waits for the
    transaction, or the transaction waits for the erasure and reads its count.

    ``wait=False``: an erasure or purge under way raises ``LockNotAvailable`` at once, for a
    transaction that holds a user's stream row: an erasure of several merged ids locks the
    count before the next id's stream, so waiting there closes a deadlock.
    """
    lock = "FOR SHARE" if wait else "FOR SHARE NOWAIT"
    row = db.execute(f"SELECT value FROM {s}.meta WHERE key = 'purges' {lock}").fetchone()
    return int(row[0]) if row else 0


def still_held(db: Any, s: str, user_id: str, seen: int) -> bool:
    """Whether the user's stream is there and the purge count of schema ``s`` is still
    ``seen``, both locked ``FOR SHARE`` until the transaction ends (an erasure or purge under
    way: no): what a write made from the user's memory (a trace, vectors) checks in its own
    transaction, so that nothing of an erasure or purge since that memory was read is kept."""
    from psycopg.errors import LockNotAvailable

    stream = f"SELECT version FROM {s}.streams WHERE user_id = %s FOR SHARE"
    if db.execute(stream, (user_id,)).fetchone() is None:
        return False
    try:
        with db.transaction():  # a savepoint: the refused lock undoes only itself
            return held_purges(db, s, wait=False) == seen
    except LockNotAvailable:
        return False  # an erasure or purge is under way: it changes the count


_EXPONENT = re.compile(r"\d[eE][+-]?\d")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|(-?(?:0|[1-9]\d*)(?:\.\d+)?[eE][+-]?\d+)')


def jsonb_exact(text: str) -> str:
    """JSON ``text`` spelled so that a ``jsonb`` column gives back the same values.

    ``jsonb`` keeps numbers as ``numeric``, which forgets an exponent: ``1.5e+300`` comes back
    as a 301-digit integer, so a float read back is an int of another value (``1e+20`` a
    number past 64 bits), and what is rendered or compared from it changes. Each number
    written with an exponent is spelled out in plain decimals instead, with a fraction
    (``1500…0.0``), which ``numeric`` keeps as written and which reads back as the same float.
    (``-0.0`` has no ``numeric``: it comes back as ``0.0``, which compares equal.)
    """
    if not _EXPONENT.search(text):
        return text
    return _TOKEN.sub(_plain, text)


def _plain(match: re.Match[str]) -> str:
    number = match.group(1)
    if number is None:  # a string, left as it is
        return match.group(0)
    from decimal import Decimal

    spelled = format(Decimal(number), "f")
    return spelled if "." in spelled else f"{spelled}.0"


class TextRefused(StoreError, InvalidOperation):
    """Text PostgreSQL cannot hold (``text.nul``): the request's to fix, not the server's.

    A ``StoreError`` still, so what a store failure may not fail (a trace, a vector) goes on
    without it; an ``InvalidOperation`` too, which a service answers with 400, not 503."""

    code = "text.nul"


def lock_key(name: str) -> int:
    """A stable 64-bit advisory lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class PgAdapter:
    """A connection to ``schema`` guarded by a lock and replaced when it breaks."""

    what = "postgres adapter"
    """How errors name the adapter (``event store``, ``decision log``)."""

    lock_timeout: float
    """Seconds a statement waits for a lock another session holds (the log's advisory lock
    under a long batch, a row an erasure holds) before it fails with ``store.locked``, as a
    SQLite writer waits out its busy timeout; never waiting for ever behind a stalled one."""

    def __init__(
        self, dsn: str, *, schema: str, connect_timeout: int, lock_timeout: float = 30.0
    ) -> None:
        check_schema(schema)
        try:
            import psycopg
        except ImportError as exc:  # the optional extra: memkg itself imports without it
            raise ConfigError(
                f"a postgresql:// store needs the PostgreSQL driver (psycopg), which is not "
                f"installed ({exc}): install memkg with its postgres extra, from the wheel or "
                "the checkout it came from: pip install "
                "'PATH/TO/memkg-VERSION-py3-none-any.whl[postgres]'",
                code="store.driver_missing",
            ) from None

        self._psycopg = psycopg
        self._dsn, self._timeout, self._schema = dsn, connect_timeout, schema
        self.lock_timeout = lock_timeout
        self._lock = threading.RLock()
        self._db: psycopg.Connection[tuple[Any, ...]] | None = None
        self._depth = 0
        """Transactions open on the connection (``_tx``, nested as savepoints): while one is,
        a dropped connection is never replaced."""
        self._s = f'"{schema}"'
        """The schema, quoted for SQL text (validated above: never user-controlled SQL)."""

    @property
    def dsn(self) -> str:
        """Where the data lives, for adapters that share its database."""
        return self._dsn

    @property
    def schema(self) -> str:
        return self._schema

    @property
    def database(self) -> str:
        """Server, database and schema (never the user or password): adapters that name the
        same one share a transaction's tables (``events.store.Companion``)."""
        from psycopg.conninfo import conninfo_to_dict

        try:
            parts = conninfo_to_dict(self._dsn)
        except self._psycopg.ProgrammingError:
            parts = {}
        host, port = parts.get("host", ""), parts.get("port", "5432")
        return f"postgresql://{host}:{port}/{parts.get('dbname', '')}#{self._schema}"

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        # A broken connection (server restart, network) is replaced on the next call, but
        # inside a transaction: what it did is lost with it, and a new connection would
        # commit the rest on its own
        if self._depth and (self._db is None or self._db.broken):
            raise StoreError(f"{self.what} {self._schema!r}: the server ended the connection "
                             "inside a transaction: nothing of it was stored; retry")  # fmt: skip
        if self._db is None or self._db.broken:
            self._db = self._psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=self._timeout
            )
            self._db.execute("SET TIME ZONE 'UTC'")
            self._db.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")
        return self._db

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A transaction (a savepoint when nested)."""
        with self._lock:
            try:
                db, tx = self._begun()
                self._depth += 1
                try:
                    yield db
                except BaseException as exc:
                    if not tx.__exit__(type(exc), exc, exc.__traceback__):
                        raise
                else:
                    tx.__exit__(None, None, None)
                    if db.broken:  # a dead connection commits nothing, and says so to no one
                        raise StoreError(f"{self.what} {self._schema!r}: the server ended the "
                                         "connection before the commit: nothing of it was "
                                         "stored; retry")  # fmt: skip
                finally:
                    self._depth -= 1
            except self._psycopg.Error as exc:
                raise self._failure(exc, "") from exc

    def _begun(
        self,
    ) -> tuple[psycopg.Connection[tuple[Any, ...]], AbstractContextManager[Any]]:
        """A transaction begun on the connection, or on a new one when the server dropped the
        idle one (a restart, a failover, a proxy's idle timeout): nothing ran on it yet, so
        the request does not fail for it. Inside a transaction (a savepoint) nothing is
        tried again: the transaction is lost with its connection."""
        db = self._connection()
        tx = db.transaction()
        try:
            tx.__enter__()  # BEGIN (or a savepoint, inside a transaction)
        except self._psycopg.OperationalError:
            if self._depth or not db.broken:
                raise
            db = self._connection()  # the broken one is replaced
            tx = db.transaction()
            tx.__enter__()
        return db, tx

    def _read(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                try:
                    return self._connection().execute(query, params).fetchall()
                except self._psycopg.OperationalError:
                    if self._depth or self._db is None or not self._db.broken:
                        raise
                    # the server dropped the connection: a read is safe to send again
                    return self._connection().execute(query, params).fetchall()
            except self._psycopg.Error as exc:
                raise self._failure(exc, "read failed: ") from exc

    def _failure(self, exc: psycopg.Error, doing: str) -> StoreError:
        """``store.error``, unless the request itself sent text PostgreSQL cannot hold: NUL
        (U+0000) in a ``text`` parameter, or ``\\u0000`` in JSON for ``jsonb``. That is the
        caller's to fix, as every other argument holding NUL (``text.nul``), and no retry or
        other replica would take it."""
        if isinstance(exc, self._psycopg.DataError) and (
            exc.sqlstate == "22P05" or (exc.sqlstate is None and "NUL" in str(exc))
        ):
            return TextRefused(
                f"{self.what} {self._schema!r}: a value holds a NUL character (U+0000), which "
                "PostgreSQL cannot store or look up: remove it"
            )
        if exc.sqlstate == "55P03":  # lock_not_available: waited out ``lock_timeout``
            return StoreError(
                f"{self.what} {self._schema!r}: {doing}waited {self.lock_timeout:g} s for a "
                "lock another session holds (a long batch of writes, an erasure); retry later",
                code="store.locked",
            )
        return StoreError(f"{self.what} {self._schema!r}: {doing}{exc}")

    def _create(self, db: psycopg.Connection[tuple[Any, ...]], ddl: str) -> None:
        """Create the tables, serialised with every other adapter initialising this schema."""
        db.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(f"memkg.init:{self._schema}"),))
        for statement in ddl.format(s=self._s).split(";"):
            db.execute(statement)
