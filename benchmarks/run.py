"""Run the benchmarks and set every goal's figure beside the recorded baseline (``make bench``).

Each script also runs alone with its own options (``python benchmarks/NAME.py --help``):
``decision_bench.py`` (one decision, 1,000 facts, 200 rules, durable decision log),
``ingest_bench.py`` (validated ingest with SHACL, one user's history, rebuild, memory),
``graph_bench.py`` (per-user graph costs as the store grows), ``store_bench.py`` (event store),
``schema_bench.py`` (schema compatibility checks beside jsoncompat).

Profiles: ``--quick`` (about two minutes on two shared cores: 10k-fact ingest, a
1,000-fact history, fewer decision runs) and ``--full`` (the default: 10k and 100k ingest, a
3,000-fact history, a 100k-fact store built by direct appends and rebuilt). 1M-fact runs are
opt-in (``--million``): they build the store by direct appends, then rebuild and decide.

The baseline (``benchmarks/baseline.json``) holds the figures measured before the current
performance work, per profile; ``--save-baseline`` replaces it with this run's figures.
``--readme`` rewrites the performance table in README.md from this run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
README = HERE.parent / "README.md"

# (figure, what it measures, the goal, True when higher is better)
GOALS: tuple[tuple[str, str, str, bool], ...] = (
    ("ingest.10000.facts_per_s", "validated ingest with SHACL, 10k facts (facts/s)",
     "≥ 5,000", True),
    ("ingest.100000.facts_per_s", "validated ingest with SHACL, 100k facts (facts/s)",
     "≥ 5,000", True),
    ("ingest.10000.last_to_first", "ingest rate, last tenth / first tenth, 10k", "≥ 0.77", True),
    ("history.late_to_early", "one user's write cost, end / start of history", "≤ 1.3×", False),
    ("validate.shacl_per_fact", "SHACL per fact (µs)", "", False),
    ("decision.decided_share", "benchmark decisions that decide", "> 0", True),
    ("decision.cpu_p50", "decision CPU p50 (ms), SQLite decision log", "≤ 1", False),
    ("decision.cpu_p99", "decision CPU p99 (ms)", "≤ 5", False),
    ("decision.wall_p50", "decision wall p50 (ms)", "", False),
    ("decision.ratio_to_raw_p50", "decision / raw durable-rules, p50", "≤ 2×", False),
    ("decision.cold_to_warm_p50", "cold / warm decision, p50", "≤ 3×", False),
    ("rebuild.10000.events_per_s", "rebuild, 10k facts (events/s)", "≥ 100,000", True),
    ("rebuild.bulk_100000.events_per_s", "rebuild, 100k facts (events/s)", "≥ 100,000", True),
    ("rebuild.bulk_100000.memory_bytes_per_fact", "rebuilt memory per fact (bytes)", "", False),
    ("rebuild.bulk_100000.resident_bytes_per_fact", "resident user cost per fact (bytes)",
     "≤ 1,024", False),
    ("rebuild.bulk_1000000.events_per_s", "rebuild, 1M facts (events/s)", "≥ 100,000", True),
    ("rebuild.bulk_1000000.resident_mb", "process memory, 1M-fact store (MB)", "≤ 1,000",
     False),
    ("graph.one_user_weights_large_to_small", "one user's weights, large / small store",
     "≈ 1", False),
    ("store.sqlite.append_one", "SQLite append, durable commit each (events/s)", "", True),
    ("schema.suite.memkg_p50", "schema check p50 (ms), shipped pair suite", "≤ 2", False),
    ("schema.suite.memkg_p99", "schema check p99 (ms), shipped pair suite", "≤ 20", False),
    ("schema.generated.memkg_p50", "schema check p50 (ms), generated pairs", "≤ 2", False),
    ("schema.generated.memkg_p99", "schema check p99 (ms), generated pairs", "≤ 20", False),
    ("schema.suite.memkg_unsafe", "unsafe schema verdicts, shipped suite (jsoncompat: next)",
     "< jsoncompat", False),
    ("schema.suite.jsoncompat_unsafe", "unsafe verdicts of jsoncompat, shipped suite", "",
     False),
)  # fmt: skip


def scripts(profile: str, million: bool) -> list[list[str]]:
    quick = ["--quick"] if profile == "quick" else []
    bulk = "20000" if profile == "quick" else "100000"
    if million:
        bulk += ",1000000"
    return [
        ["decision_bench.py", *quick],
        ["ingest_bench.py", *quick, "--bulk", bulk],
        ["graph_bench.py", *quick],
        ["store_bench.py", *quick],
        ["schema_bench.py", *quick],
    ]


def run(profile: str, million: bool, only: set[str]) -> tuple[dict[str, dict[str, object]], int]:
    figures: dict[str, dict[str, object]] = {}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="memkg-bench-") as tmp:
        for argv in scripts(profile, million):
            name = argv[0].removesuffix("_bench.py")
            if only and name not in only:
                continue
            out = Path(tmp) / f"{name}.json"
            print(f"\n=== {' '.join(argv)}", flush=True)
            failed |= subprocess.call([sys.executable, str(HERE / argv[0]), *argv[1:],
                                       "--json", str(out)])  # fmt: skip
            if out.exists():
                figures.update(json.loads(out.read_text()))
    return figures, failed


def _shown(value: object) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"


def table(figures: dict[str, dict[str, object]], before: dict[str, dict[str, object]]) -> str:
    """A Markdown table: each goal's figure before and now, and the gain as a ratio."""
    rows = ["| what | before | now | gain | goal |", "|---|---|---|---|---|"]
    for name, label, goal, higher in GOALS:
        now = figures.get(name, {}).get("value")
        was = before.get(name, {}).get("value")
        gain = "–"
        if isinstance(now, int | float) and isinstance(was, int | float) and now and was:
            gain = f"{(now / was if higher else was / now):.2f}×"
        if now is None and was is None:
            continue
        rows.append(f"| {label} | {_shown(was)} | {_shown(now)} | {gain} | {goal} |")
    return "\n".join(rows)


def write_readme(text: str, profile: str) -> None:
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    readme = README.read_text()
    if start not in readme or end not in readme:
        raise SystemExit(f"README.md has no {start} … {end} block to rewrite")
    head, rest = readme.split(start, 1)
    _old, tail = rest.split(end, 1)
    note = f"Regenerated by `python benchmarks/run.py --{profile} --readme`; gain > 1 is better."
    README.write_text(f"{head}{start}\n{note}\n\n{text}\n{end}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    profile = parser.add_mutually_exclusive_group()
    profile.add_argument("--quick", action="store_true", help="the quick profile")
    profile.add_argument("--full", action="store_true", help="the full profile (default)")
    parser.add_argument("--million", action="store_true", help="add the 1M-fact store runs")
    parser.add_argument(
        "--only", default="", help="comma-separated subset: decision,ingest,graph,store,schema"
    )
    parser.add_argument("--save-baseline", action="store_true", help="record this run as before")
    parser.add_argument("--readme", action="store_true", help="rewrite README's table")
    args = parser.parse_args(argv)
    name = "quick" if args.quick else "full"
    figures, failed = run(name, args.million, {s for s in args.only.split(",") if s})
    recorded = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    before = recorded.get(name, {})
    text = table(figures, before)
    print(f"\n=== goals ({name} profile), before = benchmarks/baseline.json\n{text}")
    if args.save_baseline:
        recorded[name] = {**before, **figures}
        BASELINE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    if args.readme:
        write_readme(text, name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
