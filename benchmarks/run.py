"""Run the benchmarks and set every goal's figure beside the recorded baseline (``make bench``).

Each script also runs alone with its own options (``python benchmarks/NAME.py --help``):
``decision_bench.py`` (one decision, 1,000 facts, 200 rules, durable decision log),
``ingest_bench.py`` (validated ingest with SHACL, one user's history, rebuild, memory),
``graph_bench.py`` (per-user graph costs as the store grows), ``store_bench.py`` (event store),
``schema_bench.py`` (schema compatibility checks beside jsoncompat).

Profiles: ``--quick`` (about two minutes on two shared cores: 10k-fact ingest, a
1,000-fact history, fewer decision runs) and ``--full`` (the default: 10k and 100k ingest, a
3,000-fact history, a 100k-fact store built by direct appends and rebuilt). 1M-fact runs are
opt-in (``--million``): they build the store by direct appends, serve decisions from it in a
fresh process, then rebuild it.

Before and after side by side: ``--before REV`` (default: the revision recorded in
``benchmarks/baseline.json``, the code before the current performance work) runs every script
twice, once on that revision's package (extracted with ``git archive``) and once on this
tree, one right after the other, so that both see the same load on a shared machine; the gain
is their ratio. ``--before none`` runs this tree only and compares with the figures recorded
in ``baseline.json``; ``--save-baseline`` records this run's before figures there.
``--readme`` rewrites the performance table in README.md from this run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
Figures = dict[str, dict[str, object]]
BASELINE = HERE / "baseline.json"
README = HERE.parent / "README.md"

# (figures, what it measures, the goal, True when higher is better): the first figure of
# the row that this run measured is shown (the quick profile's bulk store is 20k facts)
GOALS: tuple[tuple[tuple[str, ...], str, str, bool], ...] = (
    (("ingest.10000.facts_per_s",), "validated ingest with SHACL, 10k facts (facts/s of CPU)",
     "≥ 5,000", True),
    (("ingest.100000.facts_per_s",), "validated ingest with SHACL, 100k facts (facts/s of CPU)",
     "≥ 5,000", True),
    (("ingest.10000.last_to_first",), "ingest rate, last tenth / first tenth, 10k", "≥ 0.77",
     True),
    (("history.late_to_early",), "one user's write CPU, end / start of history", "≤ 1.3×",
     False),
    (("history.decide_late_to_early",), "a decision right after a write, end / start of one "
     "user's history", "≤ 1.3×", False),
    (("history.profile_late_to_early",), "render_profile right after a write, end / start of "
     "one user's history", "≤ 1.3×", False),
    (("history.recall_late_to_early",), "recall right after a write, end / start of one "
     "user's history", "≤ 1.3×", False),
    (("history.consolidate_late_to_early",), "a session's end (consolidation), end / start of "
     "one user's history", "≤ 1.3×", False),
    (("history.profile_late_ms",), "render_profile right after a write at the end of that "
     "history (ms of CPU)", "", False),
    (("validate.shacl_per_fact",), "SHACL per fact (µs)", "", False),
    (("decision.decided_share",), "benchmark decisions that decide", "> 0", True),
    (("decision.cpu_p50",), "decision CPU p50 (ms), SQLite decision log", "≤ 1", False),
    (("decision.cpu_p99",), "decision CPU p99 (ms)", "≤ 5", False),
    (("decision.python_runner_cpu_p50",), "decision CPU p50 (ms), Python rule runner", "≤ 1",
     False),
    (("decision.python_runner_cpu_p99",), "decision CPU p99 (ms), Python rule runner", "≤ 5",
     False),
    (("decision.ratio_to_raw_p50",), "decision / raw durable-rules, p50", "≤ 2×", False),
    (("decision.cold_to_warm_p50",), "cold / warm decision, p50", "≤ 3×", False),
    (("decision.after_write_cpu_p50",), "decision CPU p50 (ms) right after a write to the user",
     "", False),
    (("decision.commits_per_decision",), "decision log commits per decision, 4 threads",
     "< 1", False),
    (("rebuild.10000.events_per_s",), "rebuild after a 10k ingest (events/s of CPU)", "≥ 100,000",
     True),
    (("rebuild.bulk_100000.events_per_s", "rebuild.bulk_20000.events_per_s"),
     "rebuild of a bulk-built store, 100k (quick: 20k) facts (events/s of CPU)", "≥ 100,000", True),
    (("rebuild.10000.memory_bytes_per_fact",), "memory per fact rebuilt after a 10k ingest (bytes)",
     "", False),
    (("rebuild.bulk_100000.memory_bytes_per_fact", "rebuild.bulk_20000.memory_bytes_per_fact"),
     "rebuilt memory per fact (bytes)", "", False),
    (("rebuild.bulk_100000.resident_bytes_per_fact",
      "rebuild.bulk_20000.resident_bytes_per_fact"),
     "resident user cost per fact, memory + graph (bytes)", "≤ 1,024", False),
    (("rebuild.bulk_1000000.events_per_s",), "rebuild, 1M facts (events/s of CPU)", "≥ 100,000",
     True),
    (("rebuild.bulk_1000000.resident_mb",), "process memory after building and rebuilding a "
     "1M-fact store (MB)", "", False),
    (("serve.bulk_1000000.open_first_decision_s_wall",
      "serve.bulk_100000.open_first_decision_s_wall",
      "serve.bulk_20000.open_first_decision_s_wall"),
     "open a bulk-built store (1M with --million; else 100k, quick 20k) and decide once (s, wall)",
     "< 1", False),
    (("serve.bulk_1000000.peak_rss_mb", "serve.bulk_100000.peak_rss_mb",
      "serve.bulk_20000.peak_rss_mb"),
     "peak memory of a process deciding for 2,000 users of that store (MB)", "≤ 1,000 at 1M",
     False),
    (("serve.bulk_1000000.ingest_facts_per_s", "serve.bulk_100000.ingest_facts_per_s",
      "serve.bulk_20000.ingest_facts_per_s"),
     "validated ingest with SHACL into that store just opened, 10k facts to users drawn at "
     "random (facts/s of CPU; most writes load their user)", "", True),
    (("serve.bulk_1000000.cold_write_cpu_ms", "serve.bulk_100000.cold_write_cpu_ms",
      "serve.bulk_20000.cold_write_cpu_ms"),
     "a write to a user of that store not resident (ms of CPU; loads the user)", "", False),
    (("serve.bulk_1000000.warm_ingest_facts_per_s", "serve.bulk_100000.warm_ingest_facts_per_s",
      "serve.bulk_20000.warm_ingest_facts_per_s"),
     "validated ingest into that store, users resident (facts/s of CPU)", "≥ 5,000", True),
    (("serve.bulk_1000000.resident_ingest_facts_per_s",
      "serve.bulk_100000.resident_ingest_facts_per_s",
      "serve.bulk_20000.resident_ingest_facts_per_s"),
     "validated ingest into that store with every user resident, the headline's mix (facts/s "
     "of CPU)", "≤ 1.3× from 10k", True),
    (("serve.bulk_1000000.cold_decision_cpu_ms", "serve.bulk_100000.cold_decision_cpu_ms",
      "serve.bulk_20000.cold_decision_cpu_ms"),
     "a decision for a user of that store not resident (ms of CPU)", "", False),
    (("graph.one_user_weights_large_to_small",), "one user's weights, large / small store",
     "≈ 1", False),
    (("schema.suite.memkg_p50",), "schema check p50 (ms), shipped pair suite", "≤ 2", False),
    (("schema.suite.memkg_p99",), "schema check p99 (ms), shipped pair suite", "≤ 20", False),
    (("schema.generated.memkg_p50",), "schema check p50 (ms), generated pairs", "≤ 2", False),
    (("schema.generated.memkg_p99",), "schema check p99 (ms), generated pairs", "≤ 20", False),
    (("schema.suite.memkg_unsafe",), "unsafe schema verdicts, shipped suite (jsoncompat: next)",
     "< jsoncompat", False),
    (("schema.suite.jsoncompat_unsafe",), "unsafe verdicts of jsoncompat, shipped suite", "",
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


def _extract(rev: str, into: Path) -> Path:
    """The package of ``rev``, extracted into ``into``; returns its source root."""
    top = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--show-toplevel"],
                         check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    archive = subprocess.run(["git", "-C", top, "archive", rev, "engine"],
                             check=True, capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "engine"


def _script(
    argv: list[str], out: Path, source: Path | None
) -> tuple[dict[str, dict[str, object]], int]:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    code = subprocess.call([sys.executable, str(HERE / argv[0]), *argv[1:], "--json", str(out)],
                           env=env)  # fmt: skip
    return (json.loads(out.read_text()) if out.exists() else {}), code


def run(
    profile: str, million: bool, only: set[str], before: str | None
) -> tuple[Figures, Figures, int]:
    now: Figures = {}
    then: Figures = {}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="memkg-bench-") as tmp:
        old = _extract(before, Path(tmp)) if before else None
        for argv in scripts(profile, million):
            name = argv[0].removesuffix("_bench.py")
            if only and name not in only:
                continue
            if old is not None:
                print(f"\n=== {' '.join(argv)}   [before: {before}]", flush=True)
                found, _code = _script(argv, Path(tmp) / f"{name}.before.json", old)
                then.update(found)
            print(f"\n=== {' '.join(argv)}   [now]", flush=True)
            found, code = _script(argv, Path(tmp) / f"{name}.json", None)
            now.update(found)
            failed |= code
    return now, then, failed


def _shown(value: object) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"


def table(figures: Figures, before: Figures) -> str:
    """A Markdown table: each goal's figure before and now, and the gain as a ratio."""
    rows = ["| what | before | now | gain | goal |", "|---|---|---|---|---|"]
    for names, label, goal, higher in GOALS:
        name = next((n for n in names if n in figures or n in before), None)
        if name is None:
            continue
        now = figures.get(name, {}).get("value")
        was = before.get(name, {}).get("value")
        gain = "–"
        if isinstance(now, int | float) and isinstance(was, int | float) and now and was:
            gain = f"{(now / was if higher else was / now):.2f}×"
        rows.append(f"| {label} | {_shown(was)} | {_shown(now)} | {gain} | {goal} |")
    return "\n".join(rows)


def write_readme(text: str, profile: str, before: str | None) -> None:
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    readme = README.read_text()
    if start not in readme or end not in readme:
        raise SystemExit(f"README.md has no {start} … {end} block to rewrite")
    head, rest = readme.split(start, 1)
    _old, tail = rest.split(end, 1)
    note = (
        f"Regenerated by `python benchmarks/run.py --{profile} --readme`: before is revision "
        f"{(before or 'recorded')[:10]}, run side by side with now in the same run on a shared "
        "2-core machine; gain > 1 is better."
    )
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
    parser.add_argument(
        "--before", default=None, help="revision to run side by side (default: baseline.json)"
    )
    parser.add_argument("--save-baseline", action="store_true", help="record the before figures")
    parser.add_argument("--readme", action="store_true", help="rewrite README's table")
    parser.add_argument(
        "--json", metavar="FILE", help="also write every figure, before and now, to FILE"
    )
    args = parser.parse_args(argv)
    name = "quick" if args.quick else "full"
    recorded = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    before = args.before if args.before is not None else recorded.get("rev")
    before = None if before in (None, "none") else before
    only = {s for s in args.only.split(",") if s}
    figures, then, failed = run(name, args.million, only, before)
    if not then:
        then = recorded.get(name, {})
    text = table(figures, then)
    where = f"revision {before}, same run" if before else "benchmarks/baseline.json"
    print(f"\n=== goals ({name} profile), before = {where}\n{text}")
    if args.save_baseline and before:
        recorded["rev"] = before
        recorded[name] = {**recorded.get(name, {}), **then}
        BASELINE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    if args.readme:
        write_readme(text, name, before)
    if args.json:
        found = {"profile": name, "before_revision": before, "before": then, "now": figures}
        Path(args.json).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
