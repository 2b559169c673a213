"""A write racing an erasure of the same user on PostgreSQL: the append waits on the stream
row the erasure locked, the erasure deletes that row and commits. The write then meets the
fresh (empty) stream: it is retried on that state, or reports the documented conflict; never a
raw ``store.error``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from memkg import ConcurrencyConflict, Engine
from memkg.events.postgres import PostgresEventStore
from memkg.model.event import EventType, NewEvent
from support.observations import obs

pytestmark = pytest.mark.postgres


def _waiting(dsn: str, timeout: float = 60.0) -> None:
    """Return once some backend waits on a row lock (the append's ``FOR UPDATE``)."""
    import psycopg

    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as db:
        while time.monotonic() < deadline:
            row = db.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.01)
    raise AssertionError("the append never waited on the erasure's lock")


@contextmanager
def _erasure_holding_the_row(dsn: str, schema: str, user: str) -> Iterator[Callable[[], None]]:
    """An erasure's transaction that locked the user's stream row; calling what it yields
    deletes the user's rows and commits (what ``erase_subject`` does, with a pause between)."""
    import psycopg

    with psycopg.connect(dsn) as db:
        db.execute(f'SELECT 1 FROM "{schema}".streams WHERE user_id = %s FOR UPDATE', (user,))

        def finish() -> None:
            db.execute(f'DELETE FROM "{schema}".events WHERE user_id = %s', (user,))
            db.execute(f'DELETE FROM "{schema}".streams WHERE user_id = %s', (user,))
            db.execute(
                f"INSERT INTO \"{schema}\".meta VALUES ('purges', '1') ON CONFLICT (key)"
                " DO UPDATE SET value = (meta.value::bigint + 1)::text"
            )
            db.commit()

        yield finish


def _raced(dsn: str, schema: str, call: Callable[[], object]) -> list[BaseException]:
    """What ``call`` raised when it ran against an erasure of ``u1`` that held the user's
    stream row while ``call`` waited for it, then deleted the row and committed."""
    failed: list[BaseException] = []

    def work() -> None:
        try:
            call()
        except BaseException as exc:
            failed.append(exc)

    with _erasure_holding_the_row(dsn, schema, "u1") as finish:
        thread = threading.Thread(target=work)
        thread.start()
        _waiting(dsn)
        finish()
        thread.join(60)
    assert not thread.is_alive(), "the write still waits after the erasure committed"
    return failed


def test_a_conditional_append_whose_stream_was_erased_reports_a_conflict(
    postgres_dsn: str, pg_schema: str
) -> None:
    store = PostgresEventStore(postgres_dsn, schema=pg_schema)
    at = datetime(2026, 5, 1, tzinfo=UTC)

    def event(n: int) -> NewEvent:
        payload = {"by": "x", "reason": "y"}
        return NewEvent(event_id=f"evt_{n}", type=EventType.MEMORY_ENABLED, user_id="u1",
                        domain=None, payload=payload, recorded_at=at)  # fmt: skip

    try:
        store.append("u1", [event(1)], expected_version=0)
        failed = _raced(
            postgres_dsn, pg_schema, lambda: store.append("u1", [event(2)], expected_version=1)
        )
        assert len(failed) == 1 and isinstance(failed[0], ConcurrencyConflict), failed
        assert failed[0].code == "store.conflict"
        assert store.stream_version("u1") == 0 and store.read_stream("u1") == []

        # without an expected version the append lands on the fresh stream
        store.append("u1", [event(3)], expected_version=0)
        assert _raced(postgres_dsn, pg_schema, lambda: store.append("u1", [event(4)])) == []
        assert [e.event_id for e in store.read_stream("u1")] == ["evt_4"]
        assert store.stream_version("u1") == 1
    finally:
        store.close()


def test_an_ingest_racing_an_erasure_is_retried_on_the_fresh_stream(
    postgres_dsn: str, pg_schema: str
) -> None:
    with Engine.connect(postgres_dsn, schema=pg_schema) as engine:
        engine.ingest(obs(value="airline:CA"))
        assert _raced(postgres_dsn, pg_schema, lambda: engine.ingest(obs(value="airline:MU"))) == []
        assert [f.value for f in engine.facts("u1")] == ["airline:MU"]
        assert engine.version("u1") == 1
