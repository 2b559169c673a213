"""What per-request traces cost: decide, render_profile and recall with traces on and off.

Two SQLite engines on the same data, one keeping traces (the default retention) and one with
``trace_retention=0``, run the same requests side by side; the ratio of their CPU times is
the cost of tracing (building the trace, a span without an SDK, one row in the store's file).
"""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run for a shared machine")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    repeat, users = (200, 20) if args.quick else (2000, 100)
    with tempfile.TemporaryDirectory() as tmp:
        on, off = _engines(Path(tmp), users)
        requests = {
            "decide": lambda e, i: e.decide(f"u{i % users}", "travel", {"airline": "airline:MU"}),
            "render_profile": lambda e, i: e.render_profile(f"u{i % users}", "travel"),
            "recall": lambda e, i: e.recall(f"u{i % users}", "which airline", domain="travel"),
        }
        print(f"{'request':<16} {'traced ms':>10} {'untraced ms':>12} {'ratio':>6}")
        for name, request in requests.items():
            counter = iter(range(10**9))
            for engine in (on, off):  # warm both
                request(engine, 0)
            traced = _cpu(lambda: request(on, next(counter)), repeat)  # noqa: B023
            plain = _cpu(lambda: request(off, next(counter)), repeat)  # noqa: B023
            print(f"{name:<16} {traced * 1000:>10.3f} {plain * 1000:>12.3f} "
                  f"{traced / plain:>6.2f}")  # fmt: skip
            figures[name] = {"traced_cpu_ms": traced * 1000, "untraced_cpu_ms": plain * 1000,
                             "ratio": traced / plain}  # fmt: skip
        on.close()
        off.close()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
