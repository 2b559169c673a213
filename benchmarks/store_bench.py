"""Event store throughput: appends in batches of 1 and of 100, then ``read_all``, at 100k events.

Run as ``python benchmarks/store_bench.py [--events N] [--dsn DSN]``. SQLite always; PostgreSQL
when the server answers (in a scratch schema, dropped afterwards). Prints ``name: value unit``.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

from memkg.events.store import EventStore
from memkg.model.event import EventType, NewEvent

USERS = 1_000
SINGLE_APPENDS = 2_000
START = datetime(2026, 1, 1, tzinfo=UTC)


def _event(n: int) -> NewEvent:
    user = f"user_{n % USERS:04d}"
    return NewEvent(
        event_id=f"evt_{n:08d}",
        type=EventType.FACT_ASSERTED,
        user_id=user,
        domain="travel",
        payload={
            "key": "preference.seat",
            "value": "aisle",
            "confidence": 0.9,
            "source": {"kind": "dialogue", "ref": f"turn_{n}"},
            "valid_from": (START + timedelta(seconds=n)).isoformat(),
        },
        recorded_at=START + timedelta(seconds=n),
        fact_id=f"fact_{n // 3:08d}",
        audit_log_id=f"audit_{n // 100:06d}",
    )


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f} events/s"


def bench(name: str, store: EventStore, total: int) -> None:
    n = 0
    t0 = time.perf_counter()
    for _ in range(SINGLE_APPENDS):
        event = _event(n)
        store.append(event.user_id, [event])
        n += 1
    print(f"{name}.append.batch1: {_rate(SINGLE_APPENDS, time.perf_counter() - t0)}")

    # A batch of 100 goes to one user, as one observation's facts do.
    t0 = time.perf_counter()
    batches = 0
    while n < total:
        size = min(100, total - n)
        user = f"user_{batches % USERS:04d}"
        batch = [_event(i).model_copy(update={"user_id": user}) for i in range(n, n + size)]
        store.append(user, batch)
        n += size
        batches += 1
    print(f"{name}.append.batch100: {_rate(total - SINGLE_APPENDS, time.perf_counter() - t0)}")

    t0 = time.perf_counter()
    read = sum(1 for _ in store.read_all())
    print(f"{name}.read_all: {_rate(read, time.perf_counter() - t0)}")
    print(f"{name}.events: {read} events")


def _postgres(dsn: str) -> tuple[EventStore, Callable[[], None]] | None:
    try:
        import psycopg

        from memkg.events.postgres import PostgresEventStore

        schema = f"memkg_bench_{secrets.token_hex(4)}"
        store = PostgresEventStore(dsn, schema=schema, connect_timeout=3)
    except Exception as exc:
        print(f"postgres: skipped ({type(exc).__name__}: {str(exc).splitlines()[0]})")
        return None

    def drop() -> None:
        store.close()
        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return store, drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    from memkg.events.sqlite import SqliteEventStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "events.db")
        bench("sqlite", store, args.events)
        print(f"sqlite.file_size: {store.path.stat().st_size / 1e6:.1f} MB")
        store.close()

    found = _postgres(args.dsn)
    if found is not None:
        pg, drop = found
        try:
            bench("postgres", pg, args.events)
        finally:
            drop()


if __name__ == "__main__":
    main()
