"""Scale-out on PostgreSQL: ingest and decision throughput with 1, 2 and 4 engine processes on
one schema, and what keeping per-process caches current costs.

Run as ``python benchmarks/scale_bench.py [--quick] [--dsn DSN] [--json FILE]``. Needs the
PostgreSQL server (a scratch schema per run, dropped afterwards). Prints ``name: value unit``.

* ``scale.pN.ingest`` / ``scale.pN.decide``: operations per second of wall time, all N
  processes together, each writing to and deciding for users drawn from one shared pool of
  200 (so writers meet on streams); ``scale.pN.retried``: conflicts retried per 100 writes,
  ``scale.pN.surfaced``: conflicts that reached a caller.
* ``cache.*``: one decision on a user with 100 events whose cached projection is current
  (``warm``), after the process's own write (``own_write``: folded in, nothing read), and
  after another process's write (``other_write``: the events after the cached version are
  read and folded in), in ms; the
  version check every read makes (``version_check``, one indexed lookup); and, for the
  LISTEN/NOTIFY alternative, how long a notification takes to reach another connection
  (``notify_delivery``): a cache invalidated that way would serve stale reads that long.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

FIGURES = Figures()
POOL = 200
CONSENT = {"consent_granted": True, "consent_version": "v1"}


def _age(user: str, value: int) -> dict[str, Any]:
    return {"user_id": user, "domain": "health", "key": "child.age", "value": value,
            "source": "profile", "confidence": 0.9, "provenance": CONSENT}  # fmt: skip


def worker(dsn: str, schema: str, seed: int, count: int) -> None:
    """One engine process: ``count`` ingests, then ``count`` decisions, from a start instant
    read on standard input; prints its figures as JSON."""
    import random

    from memkg import Engine

    rng = random.Random(seed)
    with Engine.connect(dsn, schema=schema) as engine:
        engine.registry, engine.validator, engine.decide  # noqa: B018 (loaded before the start)
        print("ready", flush=True)
        start = float(sys.stdin.readline())
        time.sleep(max(0.0, start - time.time()))
        t0, c0 = time.time(), time.process_time()
        for _ in range(count):
            engine.ingest(_age(f"user{rng.randrange(POOL):03d}", rng.randint(1, 17)))
        t1, c1 = time.time(), time.process_time()
        for _ in range(count):
            engine.decide(f"user{rng.randrange(POOL):03d}", "health", {"symptom": "fever"})
        t2, c2 = time.time(), time.process_time()
        print(json.dumps({"ingest": [t0, t1, c1 - c0], "decide": [t1, t2, c2 - c1],
                          "retried": engine.conflicts.retried,
                          "surfaced": engine.conflicts.surfaced}))  # fmt: skip


def scale(dsn: str, processes: int, count: int) -> None:
    from memkg import Engine

    schema = f"memkg_bench_{secrets.token_hex(4)}"
    with Engine.connect(dsn, schema=schema) as engine:  # the schema, before the race
        for n in range(POOL):  # every user has some history: decisions read something
            engine.ingest(_age(f"user{n:03d}", 5))
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", dsn, schema, str(seed), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for seed in range(processes)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        start = time.time() + 0.5
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(f"{start}\n")
            proc.stdin.flush()
        found = [json.loads(proc.communicate(timeout=1800)[0]) for proc in procs]
    finally:
        _drop(dsn, schema)
    for phase in ("ingest", "decide"):
        wall = max(f[phase][1] for f in found) - min(f[phase][0] for f in found)
        cpu = sum(f[phase][2] for f in found)
        FIGURES.add(f"scale.p{processes}.{phase}", processes * count / wall, "ops/s",
                    f"{processes * count / cpu:,.0f} per CPU second")  # fmt: skip
    writes = processes * count
    FIGURES.add(f"scale.p{processes}.retried", 100 * sum(f["retried"] for f in found) / writes,
                "per 100 writes")  # fmt: skip
    FIGURES.add(f"scale.p{processes}.surfaced", sum(f["surfaced"] for f in found), "conflicts")


def caches(dsn: str, rounds: int) -> None:
    import psycopg

    from memkg import Engine

    schema = f"memkg_bench_{secrets.token_hex(4)}"
    try:
        with (
            Engine.connect(dsn, schema=schema) as mine,
            Engine.connect(dsn, schema=schema) as other,
        ):
            for n in range(100):
                other.ingest(_age("u", n % 17 + 1))
            fever = {"symptom": "fever"}
            mine.decide("u", "health", fever)

            def timed(before: Any, call: Any = None) -> tuple[float, float]:
                """Median CPU and wall milliseconds of one decision (or ``call``)."""
                cpu, wall = [], []
                for n in range(rounds):
                    before(n)
                    t0, c0 = time.perf_counter(), time.process_time()
                    (call or (lambda: mine.decide("u", "health", fever)))()
                    cpu.append(time.process_time() - c0)
                    wall.append(time.perf_counter() - t0)
                return statistics.median(cpu) * 1000, statistics.median(wall) * 1000

            warm = timed(lambda n: None)
            own = timed(lambda n: mine.ingest(_age("u", n % 17 + 1)))
            theirs = timed(lambda n: other.ingest(_age("u", n % 17 + 1)))
            check = timed(lambda n: None, lambda: mine.store.stream_version("u"))
        FIGURES.add("cache.warm", warm[0], "ms CPU", f"wall {warm[1]:.1f} ms")
        for name, (cpu, wall) in (("own_write", own), ("other_write", theirs)):
            FIGURES.add(f"cache.{name}", cpu, "ms CPU",
                        f"{cpu / warm[0]:.2f}x warm; wall {wall:.1f} ms")  # fmt: skip
        FIGURES.add("cache.version_check", check[0], "ms CPU",
                    f"{100 * check[0] / warm[0]:.1f}% of warm; wall {check[1]:.2f} ms")  # fmt: skip
        with (
            psycopg.connect(dsn, autocommit=True) as listener,
            psycopg.connect(dsn, autocommit=True) as sender,
        ):
            listener.execute(f"LISTEN {schema}")
            delays = []
            for n in range(rounds):
                sent = time.perf_counter()
                sender.execute(f"NOTIFY {schema}, '{n}'")
                for _ in listener.notifies(timeout=5, stop_after=1):
                    delays.append(time.perf_counter() - sent)
            FIGURES.add("cache.notify_delivery", statistics.median(delays) * 1000, "ms",
                        f"max {max(delays) * 1000:.1f} ms")  # fmt: skip
    finally:
        _drop(dsn, schema)


def _drop(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        dsn, schema, seed, count = sys.argv[2:]
        worker(dsn, schema, int(seed), int(count))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="quick: 150 operations per process, 20 cache rounds")  # fmt: skip
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    count, rounds = (150, 20) if args.quick else (600, 60)
    caches(args.dsn, rounds)
    for processes in (1, 2, 4):
        scale(args.dsn, processes, count)
    one = FIGURES.values
    for phase in ("ingest", "decide"):
        base = float(one[f"scale.p1.{phase}"]["value"])  # type: ignore[arg-type]
        for n in (2, 4):
            value = float(one[f"scale.p{n}.{phase}"]["value"])  # type: ignore[arg-type]
            FIGURES.add(f"scale.p{n}.{phase}_speedup", value / base, "x one process")
    FIGURES.save(args.json)


if __name__ == "__main__":
    main()
