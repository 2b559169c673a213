"""Event store throughput: appends in batches of 1 and of 100, then ``read_all``, at 100k events.

Run as ``python benchmarks/store_bench.py [--events N] [--quick] [--dsn DSN] [--json FILE]``.
SQLite always; PostgreSQL when the server answers (in a scratch schema, dropped afterwards).
Prints ``name: value unit``.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

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


FIGURES = Figures()


def bench(name: str, store: EventStore, total: int) -> None:
    n = 0
    t0 = time.perf_counter()
    for _ in range(SINGLE_APPENDS):
        event = _event(n)
        store.append(event.user_id, [event])
        n += 1
    FIGURES.add(f"store.{name}.append_one", SINGLE_APPENDS / (time.perf_counter() - t0), "events/s")

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
    FIGURES.add(
        f"store.{name}.append_batch100",
        (total - SINGLE_APPENDS) / (time.perf_counter() - t0),
        "events/s",
    )

    t0 = time.perf_counter()
    read = sum(1 for _ in store.read_all())
    FIGURES.add(f"store.{name}.read_all", read / (time.perf_counter() - t0), "events/s")
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
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000, help="events appended (100k)")
    parser.add_argument(
        "--quick", action="store_true", help="a quick profile: 20k events, SQLite only"
    )
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    if args.quick:
        args.events = min(args.events, 20_000)
        global SINGLE_APPENDS
        SINGLE_APPENDS = 300

    from memkg.events.sqlite import SqliteEventStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteEventStore(Path(tmp) / "events.db")
        bench("sqlite", store, args.events)
        print(f"sqlite.file_size: {store.path.stat().st_size / 1e6:.1f} MB")
        store.close()

    found = None if args.quick else _postgres(args.dsn)
    if found is not None:
        pg, drop = found
        try:
            bench("postgres", pg, args.events)
        finally:
            drop()
    FIGURES.save(args.json)


if __name__ == "__main__":
    main()
