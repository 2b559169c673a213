"""Every PostgreSQL writer takes stream row locks before the log's advisory lock, never a row
lock while holding it: a batch (a merge, a split, bulk ingest) locks all of its rows first, so
it cannot deadlock with a plain append that holds one of them and waits for the log."""

from __future__ import annotations

import pytest

from memkg.events.postgres import PostgresEventStore

pytestmark = pytest.mark.postgres


def test_a_batch_locks_its_streams_up_front_without_the_log_lock(
    postgres_dsn: str, pg_schema: str
) -> None:
    import psycopg

    store = PostgresEventStore(postgres_dsn, schema=pg_schema)
    try:
        with store.batch(["p", "x"]):
            pass  # the rows are made (at version 0): another connection sees them
        with store.batch(["x", "p", "x"]), psycopg.connect(postgres_dsn, autocommit=True) as db:
            for user in ("p", "x"):  # locked by the batch
                with pytest.raises(psycopg.errors.LockNotAvailable):
                    db.execute(
                        f'SELECT 1 FROM "{pg_schema}".streams WHERE user_id = %s FOR UPDATE NOWAIT',
                        (user,),
                    )
            pid = store._connection().info.backend_pid
            advisory = db.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,)
            ).fetchone()
            assert advisory == (0,)  # taken by the first append, after every row lock
        assert store.stream_version("p") == store.stream_version("x") == 0
    finally:
        store.close()
