"""What the commands share: how they print, how they exit, which domain a key is in."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memkg.engine.projections import SEQ_MAX as SEQ_MAX  # the CLI bounds --as-of by it
from memkg.errors import MemkgError
from memkg.postgres import check_schema

if TYPE_CHECKING:
    from memkg.engine import Engine

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3


def emit(out: TextIO, data: Any) -> None:
    """One JSON document on one line (non-ASCII kept readable)."""
    out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def key_domain(engine: Engine, key: str) -> str:
    """The one domain that declares ``key`` (``SchemaRegistry.domain_of``)."""
    return engine.registry.domain_of(key, "--domain")


def store_missing(db: str | Path, schema: str = "memkg", table: str = "events") -> bool:
    """``--db`` names a SQLite file that does not exist (not ``:memory:``), or a PostgreSQL
    server whose ``schema`` holds no ``table`` (the event store's, or the keys' for the
    access commands). A server that cannot be asked says nothing here: opening the store
    reports why."""
    if not is_postgres(db):
        return str(db) != ":memory:" and not Path(db).exists()
    check_schema(schema)  # a name no store is made under: say so, not that none is there
    try:
        import psycopg
    except ImportError:  # opening says store.driver_missing
        return False
    try:
        with psycopg.connect(str(db), connect_timeout=10) as conn:
            row = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".{table}',)).fetchone()
    except psycopg.Error:
        return False
    return row is None or row[0] is None


def require_store(db: str | Path, schema: str = "memkg", table: str = "events") -> None:
    """Refuse a read of a store that does not exist: a mistyped ``--db`` or ``--pg-schema``
    read as a new, empty store would look like a user memkg knows nothing of
    (``store.not_found``)."""
    if store_missing(db, schema, table):
        where = "the schema --pg-schema names" if is_postgres(db) else "a file memkg wrote"
        shown = str(db) if not is_postgres(db) else f"{_server(str(db))} schema {schema}"
        raise MemkgError(
            f"no memkg store at {shown[:300]}: check --db ({where}; the default is ./memkg.db "
            "in this folder); a read never starts a store",
            code="store.not_found",
        )


def _server(dsn: str) -> str:
    """A PostgreSQL URL as its server and database only: never a user or a password, in
    whichever form the URL gives them."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:  # no driver, or a URL it cannot read: name nothing
        return "the PostgreSQL server --db names"
    host, port, name = parts.get("host", ""), parts.get("port", "5432"), parts.get("dbname", "")
    return f"postgresql://{host}:{port}/{name}"


def is_postgres(db: str | Path) -> bool:
    """``--db`` names a PostgreSQL server (``postgresql://...``) rather than a SQLite file."""
    return str(db).startswith(("postgresql://", "postgres://"))


def whole(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` to ``high`` (a usage error, exit 2,
    otherwise, before anything opens or listens): the bounds the HTTP API puts on the same
    parameter."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"of {low} or more"
            raise argparse.ArgumentTypeError(f"{value} is out of range: give a number {span}")
        return value

    return parse
