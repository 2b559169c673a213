"""Two processes appending to one user with read-then-append retry loops lose nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memkg.events.postgres import PostgresEventStore
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import EventStore

ENGINE = Path(__file__).resolve().parents[3] / "engine"
PER_PROCESS = 40

WORKER = """
import sys, time
from datetime import UTC, datetime
from memkg.errors import ConcurrencyConflict
from memkg.model.event import EventType, NewEvent

kind, where, schema, name, count, start = sys.argv[1:]
if kind == "sqlite":
    from memkg.events.sqlite import SqliteEventStore
    store = SqliteEventStore(where)
else:
    from memkg.events.postgres import PostgresEventStore
    store = PostgresEventStore(where, schema=schema)
time.sleep(max(0.0, float(start) - time.time()))
done = conflicts = 0
while done < int(count):
    version = store.stream_version("shared")
    event = NewEvent(
        event_id=f"{name}-{done}", type=EventType.SIGNAL_RECORDED, user_id="shared",
        domain=None, payload={"writer": name}, recorded_at=datetime.now(UTC),
    )
    try:
        store.append("shared", [event], expected_version=version)
        done += 1
    except ConcurrencyConflict:
        conflicts += 1
store.close()
print(conflicts)
"""


def _race(kind: str, where: str, schema: str) -> list[int]:
    env = {**os.environ, "PYTHONPATH": str(ENGINE)}
    start = str(time.time() + 1.5)  # both interpreters are up before either appends
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, kind, where, schema, name, str(PER_PROCESS), start],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("w1", "w2")
    ]
    conflicts = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        conflicts.append(int(out))
    return conflicts


def _check(store: EventStore) -> None:
    stream = store.read_stream("shared")
    assert [e.version for e in stream] == list(range(1, 2 * PER_PROCESS + 1))
    assert len({e.event_id for e in stream}) == 2 * PER_PROCESS
    assert [e.seq for e in stream] == sorted(e.seq for e in stream)


def test_two_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    SqliteEventStore(path).close()

    _race("sqlite", str(path), "")

    store = SqliteEventStore(path)
    _check(store)
    store.close()


@pytest.mark.postgres
def test_two_processes_on_one_postgres_schema(postgres_dsn: str, pg_schema: str) -> None:
    PostgresEventStore(postgres_dsn, schema=pg_schema).close()

    _race("postgres", postgres_dsn, pg_schema)

    store = PostgresEventStore(postgres_dsn, schema=pg_schema)
    _check(store)
    store.close()
