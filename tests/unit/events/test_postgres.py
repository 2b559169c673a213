"""What the PostgreSQL store promises beyond the contract."""

from __future__ import annotations

from typing import Any

import pytest

from memkg.errors import ConcurrencyConflict, ConfigError
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
