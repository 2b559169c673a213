"""Validated ingest throughput, the cost of each validation stage, and rebuild speed.

Run: ``python benchmarks/ingest_bench.py [--sizes 10000,100000] [--batch 500]``.
Prints plain ``name: value unit`` lines; ratios are measured side by side in this run.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memkg import Engine, EngineConfig, FrozenClock

AIRLINES = ["airline:MU", "airline:CA", "airline:CZ", "airline:HO", "airline:NH", "airline:LH"]
CITIES = ["city:shanghai", "city:beijing", "city:tokyo", "city:frankfurt", "city:singapore"]


def observations(count: int, users: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    made = []
    for index in range(count):
        user = f"user-{rng.randrange(users):06d}"
        choice = index % 4
        if choice == 0:
            key, value = "airline.preferred", rng.choice(AIRLINES)
        elif choice == 1:
            key, value = "seat.preference", rng.choice(["window", "aisle", "middle"])
        elif choice == 2:
            key, value = "location.city", rng.choice(CITIES)
        else:
            key, value = "cabin.class", rng.choice(["economy", "business"])
        made.append(
            {
                "user_id": user,
                "domain": "travel",
                "key": key,
                "value": value,
                "source": rng.choice(["dialogue", "behavior", "profile"]),
                "confidence": round(rng.uniform(0.5, 1.0), 2),
            }
        )
    return made


def timed(label: str, seconds: float, count: int, unit: str = "facts") -> float:
    rate = count / seconds if seconds else float("inf")
    print(f"{label}: {rate:,.0f} {unit}/s ({seconds * 1e6 / count:,.1f} µs each, n={count:,})")
    return rate


def stage_costs(engine: Engine, sample: list[dict[str, Any]]) -> None:
    validator = engine.validator
    specs = [validator.registry.spec(o["domain"], o["key"]) for o in sample]
    start = time.perf_counter()
    for obs, spec in zip(sample, specs, strict=True):
        assert spec is not None
        for _ in spec.validator.iter_errors(obs["value"]):
            pass
    json_s = time.perf_counter() - start
    now = engine.clock.now()
    shacl = validator.shacl
    validator.shacl = None
    start = time.perf_counter()
    validator.check_many(sample, now, engine.store.subject_salt)
    without_shacl = time.perf_counter() - start
    validator.shacl = shacl
    start = time.perf_counter()
    validator.check_many(sample, now, engine.store.subject_salt)
    with_shacl = time.perf_counter() - start
    n = len(sample)
    print(f"json_schema_per_fact: {json_s * 1e6 / n:,.1f} µs")
    print(f"pipeline_without_shacl_per_fact: {without_shacl * 1e6 / n:,.1f} µs")
    print(f"shacl_per_fact (batched): {(with_shacl - without_shacl) * 1e6 / n:,.1f} µs")
    print(f"shacl_share_of_validation: {(with_shacl - without_shacl) / with_shacl:.0%}")


def ingest(size: int, batch: int, shacl: bool, folder: Path) -> tuple[float, float, float]:
    """Throughput over the whole run, and over the first and last 10% (flatness)."""
    clock = FrozenClock(datetime(2026, 5, 1, tzinfo=UTC))
    data = observations(size, users=max(size // 100, 1))
    path = folder / f"ingest-{size}-{shacl}.db"
    window = max(size // 10, batch)
    with Engine.open(path, config=EngineConfig(shacl=shacl), clock=clock) as engine:
        start = time.perf_counter()
        marks: list[float] = []
        for offset in range(0, size, batch):
            engine.ingest_many(data[offset : offset + batch])
            clock.advance(timedelta(seconds=1))
            marks.append(time.perf_counter())
        total = time.perf_counter() - start
        per_window = max(window // batch, 1)
        first = marks[per_window - 1] - start
        last = marks[-1] - marks[-1 - per_window]
        rebuild = engine.rebuild()
    label = "with SHACL" if shacl else "without SHACL"
    rate = timed(f"ingest_{size}_{label}", total, size)
    first_rate = per_window * batch / first
    last_rate = per_window * batch / last
    print(
        f"  first 10%: {first_rate:,.0f} facts/s, last 10%: {last_rate:,.0f} facts/s, "
        f"last/first = {last_rate / first_rate:.2f}"
    )
    timed(f"rebuild_{size}_events", rebuild.seconds, rebuild.events, "events")
    return rate, first_rate, last_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument(
        "--shacl-sizes",
        default="10000",
        help="sizes also run with SHACL on (slow: pySHACL costs ms per fact)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memkg-bench-") as tmp:
        folder = Path(tmp)
        engine = Engine.open(folder / "stages.db")
        stage_costs(engine, observations(2_000, users=200))
        engine.close()
        for size in [int(s) for s in args.sizes.split(",") if s]:
            ingest(size, args.batch, shacl=False, folder=folder)
        for size in [int(s) for s in args.shacl_sizes.split(",") if s]:
            ingest(size, args.batch, shacl=True, folder=folder)
    print("goal (DESIGN section 8): validated ingest >= 5,000 facts/s; rebuild >= 50,000 events/s")


if __name__ == "__main__":
    main()
