"""Run every benchmark, one after the other, and print their figures (``make bench``).

Each script also runs alone with its own options; see its ``--help``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    ("decisions (DESIGN section 8: p50 <= 1 ms, p99 <= 5 ms, <= 3x raw)", ["decision_bench.py"]),
    ("validated ingest and rebuild", ["ingest_bench.py", "--sizes", "10000,100000"]),
    ("contextual graph", ["graph_bench.py"]),
    ("event store", ["store_bench.py"]),
)


def main() -> int:
    failed = 0
    for title, argv in SCRIPTS:
        print(f"\n=== {title}", flush=True)
        failed |= subprocess.call([sys.executable, str(HERE / argv[0]), *argv[1:]])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
