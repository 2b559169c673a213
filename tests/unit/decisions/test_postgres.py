"""What the PostgreSQL decision log promises beyond the contract."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.decisions import PostgresDecisionLog
from memkg.errors import ConfigError, StoreError
from memkg.events.postgres import PostgresEventStore

pytestmark = pytest.mark.postgres


def test_schema_name_must_be_an_identifier() -> None:
    with pytest.raises(ConfigError, match="schema name"):
        PostgresDecisionLog("postgresql://unused", schema='x"; DROP TABLE users; --')


def test_shares_its_schema_with_the_event_store(postgres_dsn: str, pg_schema: str) -> None:
    log = PostgresDecisionLog(postgres_dsn, schema=pg_schema)
    store = PostgresEventStore(postgres_dsn, schema=pg_schema)  # after the log: meta is shared
    other = PostgresDecisionLog(postgres_dsn, schema=pg_schema)
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    made = engine.decide("v", "finance", {"product_type": "bonds", "amount": 1})
    log.append(made)
    log.save_bundle("digest-1", {"a.yaml": "rules: []"})

    assert other.get(made.decision_id) == made  # another process sees it at once
    assert other.bundle("digest-1") == {"a.yaml": "rules: []"}
    assert store.head() == 0 and log.files() == []
    for closing in (log, store, other):
        closing.close()


def test_records_are_jsonb_and_reads_are_indexed(postgres_dsn: str, pg_schema: str) -> None:
    PostgresDecisionLog(postgres_dsn, schema=pg_schema).close()
    with psycopg.connect(postgres_dsn) as db:
        kind = db.execute(
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_schema = %s AND table_name = 'decisions' AND column_name = 'record'",
            (pg_schema,),
        ).fetchone()
        indexes = db.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = 'decisions'",
            (pg_schema,),
        ).fetchall()
    assert kind == ("jsonb",)
    definitions = " ".join(row[0] for row in indexes)
    assert "(decision_id)" in definitions and "(user_id, seq)" in definitions


def test_a_newer_decision_log_schema_is_refused(postgres_dsn: str, pg_schema: str) -> None:
    PostgresDecisionLog(postgres_dsn, schema=pg_schema).close()
    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        db.execute(
            f"UPDATE \"{pg_schema}\".meta SET value = '99' WHERE key = 'decision_log_version'"
        )
    with pytest.raises(StoreError, match="upgrade memkg"):
        PostgresDecisionLog(postgres_dsn, schema=pg_schema)


def test_server_errors_are_store_errors(postgres_dsn: str, pg_schema: str) -> None:
    log = PostgresDecisionLog(postgres_dsn, schema=pg_schema)
    log.save_bundle("d", {"a.yaml": "x"})
    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        db.execute(f'DROP TABLE "{pg_schema}".decisions')
    with pytest.raises(StoreError, match="decision log"):
        log.for_user("u")
    with pytest.raises(StoreError, match="decision log"):
        log.erase_user("u")
    log.close()
