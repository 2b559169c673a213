"""What per-request traces cost: decide, render_profile and recall with traces on and off.

Two SQLite engines on the same data, one keeping traces (the default retention) and one with
``trace_retention=0``, run the same requests side by side, in alternating rounds; the
median ratio of their CPU times is the cost of tracing (building the trace, reading the
user's stream mark, one guarded row in the store's file; no span is started without an
OpenTelemetry SDK).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memkg import Engine


def _engines(folder: Path, users: int) -> list[Engine]:
    from memkg import Engine, EngineConfig

    made = []
    for name, retention in (("on", timedelta(days=7)), ("off", timedelta(0))):
        engine = Engine.open(folder / f"{name}.db", config=EngineConfig(trace_retention=retention))
        for u in range(users):
            user = f"u{u}"
            engine.ingest({"user_id": user, "domain": "travel", "key": "airline.avoided",
                           "value": ["airline:MU"], "source": "dialogue"})  # fmt: skip
            engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                           "value": "aisle", "source": "dialogue"})  # fmt: skip
        made.append(engine)
    return made


def _cpu(run: Callable[[], object], repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        run()
    return (time.process_time() - started) / repeat


def _side_by_side(
    traced: Callable[[], object], plain: Callable[[], object], repeat: int, rounds: int
) -> tuple[float, float, float]:
    """Median CPU per call of each, and the median of the per-round ratios: the two run in
    alternating rounds, so both see the same load on a shared machine."""
    ons, offs, ratios = [], [], []
    for round_ in range(rounds):
        pair = [(traced, ons), (plain, offs)]
        for run, into in pair if round_ % 2 == 0 else reversed(pair):
            into.append(_cpu(run, repeat))
        ratios.append(ons[-1] / offs[-1])
    return statistics.median(ons), statistics.median(offs), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run for a shared machine")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    repeat, rounds, users = (40, 6, 20) if args.quick else (200, 12, 100)
    with tempfile.TemporaryDirectory() as tmp:
        on, off = _engines(Path(tmp), users)
        requests = {
            "decide": lambda e, i: e.decide(f"u{i % users}", "travel", {"airline": "airline:MU"}),
            "render_profile": lambda e, i: e.render_profile(f"u{i % users}", "travel"),
            "recall": lambda e, i: e.recall(f"u{i % users}", "which airline", domain="travel"),
        }
        print(f"{'request':<16} {'traced ms':>10} {'untraced ms':>12} {'added ms':>9} "
              f"{'ratio':>6}")  # fmt: skip
        for name, request in requests.items():
            counter = iter(range(10**9))
            for engine in (on, off):  # warm both
                request(engine, 0)
            traced, plain, ratio = _side_by_side(
                lambda: request(on, next(counter)),  # noqa: B023
                lambda: request(off, next(counter)),  # noqa: B023
                repeat, rounds,
            )  # fmt: skip
            print(f"{name:<16} {traced * 1000:>10.3f} {plain * 1000:>12.3f} "
                  f"{(traced - plain) * 1000:>9.3f} {ratio:>6.2f}")  # fmt: skip
            figures[name] = {"traced_cpu_ms": traced * 1000, "untraced_cpu_ms": plain * 1000,
                             "added_cpu_ms": (traced - plain) * 1000,
                             "ratio": ratio}  # fmt: skip
        on.close()
        off.close()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
