"""The library's ``erase`` reaches the keys, grants and access audit kept beside the memory
(the same SQLite file or PostgreSQL schema), as the CLI's and the service's do: the erased
id is left nowhere in clear, and a store with no access tables gets none."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import Engine
from memkg.access import AccessStore, Keyring
from memkg.access.model import AccessRecord
from memkg.access.sqlite import SqliteAccessStore
from support.observations import obs


def _kept(ring: Keyring, user: str) -> None:
    ring.create("agent", ["read"], ["travel"], user_id=user)
    ring.store.record([AccessRecord(record_id="acc_1", at=datetime(2026, 5, 1, tzinfo=UTC),
                                    key_id="k1", action="facts", status=200, subject=user,
                                    domain="travel")])  # fmt: skip


def _clear(store: AccessStore, user: str) -> bool:
    issued = store.keys()
    return not any(k.user_id == user for k in issued) and not store.records(subject=user)


def test_the_library_erasure_pseudonymises_the_access_tables_of_its_sqlite_file(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    keys = SqliteAccessStore(db)
    ring = Keyring(keys, Engine.open(":memory:").clock)
    _kept(ring, "mei")
    with Engine.open(db) as engine:
        engine.ingest(obs(user_id="mei"))
        engine.erase("mei")
    assert _clear(keys, "mei") and keys.records(subject=keys.alias("mei"))
    keys.close()
    with sqlite3.connect(db) as raw:
        bound = raw.execute("SELECT count(*) FROM access_keys WHERE user_id = 'mei'").fetchone()
    assert bound == (0,)

    bare = tmp_path / "bare.db"
    with Engine.open(bare) as engine:
        engine.ingest(obs(user_id="mei"))
        engine.erase("mei")
    with sqlite3.connect(bare) as raw:
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not any(t.startswith("access_") for t in tables)


@pytest.fixture
def pg_store(postgres_dsn: str, pg_schema: str) -> Iterator[AccessStore]:
    from memkg.access.postgres import PostgresAccessStore

    made = PostgresAccessStore(postgres_dsn, schema=pg_schema)
    yield made
    made.close()


@pytest.mark.postgres
def test_the_library_erasure_pseudonymises_the_access_tables_of_its_schema(
    pg_store: AccessStore, postgres_dsn: str, pg_schema: str
) -> None:
    ring = Keyring(pg_store, Engine.open(":memory:").clock)
    _kept(ring, "mei")
    with Engine.connect(postgres_dsn, schema=pg_schema) as engine:
        engine.ingest(obs(user_id="mei"))
        engine.erase("mei")
    assert _clear(pg_store, "mei") and pg_store.records(subject=pg_store.alias("mei"))


def test_a_file_whose_path_a_uri_would_misread_is_found_too(tmp_path: Path) -> None:
    """A '#', '?' or '%' in the folder's name: the access tables are read in that file, not
    in another one a URI would name."""
    folder = tmp_path / "room#2 ?%41"
    folder.mkdir()
    db = folder / "m.db"
    keys = SqliteAccessStore(db)
    _kept(Keyring(keys, Engine.open(":memory:").clock), "mei")
    with Engine.open(db) as engine:
        engine.ingest(obs(user_id="mei"))
        engine.erase("mei")
    assert _clear(keys, "mei")
    keys.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]
