"""Where the time goes: a cProfile of ingest, a warm decision or a rebuild, as shares of the total.

Run: ``python benchmarks/where_time_goes.py ingest|decision|rebuild [--top 15]``. The workloads are
the benchmarks' own (``ingest_bench`` observations with SHACL on, ``decision_bench``'s user
and rules on the SQLite decision log, a rebuild of a 30k-fact store), small enough to run
in a minute; the shares are of the profiled CPU time: the profiler's timer is the thread's
CPU clock (``time.thread_time``), so time spent waiting (an ``fsync``, another process on
the machine) counts for nothing, as in the benchmarks' CPU figures. To profile the code
before a change, put that revision's ``engine/`` first on ``PYTHONPATH`` (``run.py
--before`` does the same).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decision_bench
import ingest_bench

from memkg import Engine, EngineConfig, FrozenClock
from memkg.roots import builtin


def ingest(folder: Path) -> Callable[[], object]:
    clock = FrozenClock(ingest_bench.START)
    data = ingest_bench.observations(6_000, users=60)
    engine = Engine.open(folder / "ingest.db", clock=clock)
    engine.ingest_many(data[:1_000])

    def work() -> None:
        for offset in range(1_000, len(data), 500):
            engine.ingest_many(data[offset : offset + 500])
            clock.advance(timedelta(seconds=1))

    return work


def decision(folder: Path) -> Callable[[], object]:
    for name in ("schemas", "ontology"):
        shutil.copytree(builtin("examples") / name, folder / name)
    health = folder / "rules" / "health"
    health.mkdir(parents=True)
    (health / "domain.yaml").write_text(decision_bench.health_domain())
    (health / "bench.yaml").write_text(decision_bench.rule_file(200))
    clock = FrozenClock(decision_bench.START + timedelta(days=1))
    config = EngineConfig(roots=(folder,), shacl=False)
    engine = Engine.open(folder / "decide.db", clock=clock, config=config)
    made = decision_bench.history(1_000)
    for offset in range(0, len(made), 100):
        engine.ingest_many(made[offset : offset + 100])
    engine.decide("bench", "health", {"symptom": "fever"}, decision="bench")

    def work() -> None:
        for i in range(200):
            clock.advance(timedelta(seconds=1))
            symptom = decision_bench.SYMPTOMS[i % len(decision_bench.SYMPTOMS)]
            engine.decide("bench", "health", {"symptom": symptom}, decision="bench")

    return work


def rebuild(folder: Path) -> Callable[[], object]:
    ingest_bench.bulk_store(30_000, folder / "rebuild.db")
    engine = Engine.open(folder / "rebuild.db")
    return engine.rebuild


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("ingest", "decision", "rebuild"))
    parser.add_argument("--top", type=int, default=15, help="functions shown (15)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memkg-profile-") as tmp:
        work = {"ingest": ingest, "decision": decision, "rebuild": rebuild}[args.what](Path(tmp))
        profiler = cProfile.Profile(time.thread_time)
        profiler.runcall(work)
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][3])  # type: ignore[attr-defined]
    print(f"{args.what}: {total:.2f} s CPU profiled; cumulative share, own share, function")
    shown = 0
    for (file, line, function), (_cc, _nc, own, cumulative, _callers) in rows:
        if "memkg" not in file and own / total < 0.03:
            continue
        where = file.split("/memkg/")[-1] if "/memkg/" in file else Path(file).name
        print(f"{cumulative / total:6.0%} {own / total:6.0%}  {where}:{line} {function}")
        shown += 1
        if shown >= args.top:
            break


if __name__ == "__main__":
    main()
