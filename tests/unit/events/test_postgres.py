"""What the PostgreSQL store promises beyond the contract."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from memkg.errors import ConcurrencyConflict, ConfigError, StoreError
from memkg.events.postgres import PostgresEventStore

MakeEvent = Any
pytestmark = pytest.mark.postgres


def test_schema_name_must_be_an_identifier() -> None:
    with pytest.raises(ConfigError, match="schema name"):
        PostgresEventStore("postgresql://unused", schema='x"; DROP TABLE users; --')


def test_version_constraint_backs_up_the_stream_lock(
    postgres_dsn: str, pg_schema: str, make_event: MakeEvent
) -> None:
    store = PostgresEventStore(postgres_dsn, schema=pg_schema)
    store.append("alice", [make_event()])
    with store._tx() as db:
        db.execute(f'DELETE FROM "{pg_schema}".streams')  # a writer that bypassed the lock

    with pytest.raises(ConcurrencyConflict) as caught:
        store.append("alice", [make_event()], expected_version=0)

    assert (caught.value.expected, caught.value.actual) == (0, 1)
    assert len(store.read_stream("alice")) == 1
    assert store.files() == []
    store.close()


def test_two_stores_share_one_schema(
    postgres_dsn: str, pg_schema: str, make_event: MakeEvent
) -> None:
    one = PostgresEventStore(postgres_dsn, schema=pg_schema)
    two = PostgresEventStore(postgres_dsn, schema=pg_schema)
    one.append("alice", [make_event()])
    one.erase_subject("bob", erasure_id="era_1", at_iso="2026-01-01T00:00:00Z")

    assert two.stream_version("alice") == 1
    assert two.was_erased("bob")  # both hold the same erasure key
    assert one.subject_salt("carol") == two.subject_salt("carol")
    one.close()
    two.close()


class _SaltRace:
    """A connection whose insert of a salt races another process: the salt is made by
    ``other`` just before the insert, and erased by ``other`` right after it."""

    def __init__(self, db: Any, other: PostgresEventStore, schema: str, user: str) -> None:
        self._db, self._other, self._schema, self._user = db, other, schema, user
        self.outcomes: list[str] = []

    def execute(self, query: str, params: Any = None) -> Any:
        racing = query.startswith("INSERT") and "subject_salts" in query
        if racing:
            self._other.subject_salt(self._user)
        result = self._db.execute(query, params)
        if racing:  # the erasure runs to its end before the insert's transaction goes on
            eraser = threading.Thread(target=self._erase)
            eraser.start()
            eraser.join()
        return result

    def _erase(self) -> None:
        """Delete the salt, or give up at once if the insert holds its row (what it must)."""
        try:
            with self._other._tx() as db:
                db.execute("SET LOCAL lock_timeout = '50ms'")
                db.execute(f'DELETE FROM "{self._schema}".subject_salts WHERE user_id = %s',
                           (self._user,))  # fmt: skip
            self.outcomes.append("erased")
        except (StoreError, psycopg.errors.LockNotAvailable):
            self.outcomes.append("held")


def test_a_salt_erased_while_it_is_made_is_still_returned(
    postgres_dsn: str, pg_schema: str
) -> None:
    store = PostgresEventStore(postgres_dsn, schema=pg_schema)
    other = PostgresEventStore(postgres_dsn, schema=pg_schema)
    made: list[_SaltRace] = []
    real_tx = store._tx

    @contextmanager
    def racing_tx() -> Iterator[Any]:
        with real_tx() as db:
            made.append(_SaltRace(db, other, pg_schema, "carol"))
            yield made[-1]

    store._tx = racing_tx  # type: ignore[method-assign]
    salt = store.subject_salt("carol")  # failed with "a row vanished" (store.error)

    assert len(salt) == 16
    assert [o for race in made for o in race.outcomes] == ["held"]  # the row was locked
    store.close()
    other.close()
