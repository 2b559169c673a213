"""Decision latency for a user with 1,000 facts and 200 rules, next to raw durable-rules.

Both sides run in this process on the same rules: ``engine.decide`` (read memory, arbitrate,
weigh edges, match, choose, explain, append to the durable SQLite decision log) and
durable-rules alone asserting the messages that decision sent (one session each, as
``decide`` does). The user's history is realistic: each key mostly restated by the source
that owns it (an EHR for conditions, a device for blood pressure, the profile for the child's
age), a few agreeing restatements from other sources, real-valued confidences; so decisions
decide (the status counts are printed; a harness where every decision is ``needs_review``
measures the wrong path). Figures: wall and CPU p50/p99 of a resident user (CPU is what
the goals bound: on a shared machine wall time also counts other processes), the ratio of
CPU p50 to raw durable-rules' CPU p50 (both measured with ``time.process_time``), and a user
not resident (every cached projection dropped before each call), each such decision paired
with a warm one of the same context right after it: cold / warm is the ratio of their medians,
so that a machine whose speed drifts during the run moves both sides alike. A decision right
after a write to the user (an agent's turn: write what it learned, then decide), paired the
same way: what a write leaves to be worked out again.
The heap is settled after the first decision, as the HTTP and MCP servers settle it once
started (``memkg.heap.settle``): without it a full collection of what start-up loaded lands on
a decision now and then (40 to 70 ms of CPU), and p99 measures the collector.
Goals (DESIGN section 8): ≤ 2× raw, p50 ≤ 1 ms and p99 ≤ 5 ms CPU, cold p50 ≤ 3× warm.
"""

from __future__ import annotations

import argparse
import collections
import copy
import gc
import inspect
import random
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from durable.engine import Host

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

from memkg import Engine, EngineConfig, FrozenClock
from memkg.roots import builtin
from memkg.rules.compiler import compile_table

CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "care"}
SYMPTOMS = ["fever", "cough", "wheezing", "rash", "headache", "vomiting", "chest_pain", "dizziness"]
CONDITIONS = ["asthma", "diabetes_t1", "hypertension", "epilepsy", "pregnancy", "celiac"]
ACTIONS = [
    "call_emergency_services",
    "book_emergency_appointment",
    "book_same_day_appointment",
    "recommend_urgent_care",
    "advise_home_monitoring",
]
START = datetime(2026, 5, 1, 6, tzinfo=UTC)


def rule_file(count: int, seed: int = 3) -> str:
    """Four rule families: child's age, a condition, a blood pressure bound, a graph path."""
    rng = random.Random(seed)
    lines = [
        "hit_policy:",
        f"  priority: [{', '.join(ACTIONS)}]",
        "default:",
        "  then: {action: advise_home_monitoring}",
        "  reason_code: NONE",
        "  explain: nothing applies",
        "rules:",
    ]
    for i in range(count):
        when = [f"      - context: {{symptom: {rng.choice(SYMPTOMS)}}}"]
        kind = i % 4
        if kind == 0:
            when.append(f"      - fact: {{key: child.age, lt: {rng.randrange(1, 12)}}}")
        elif kind == 1:
            when.append(
                f"      - fact: {{key: medical.conditions, contains: 'condition:"
                f"{rng.choice(CONDITIONS)}'}}"
            )
        elif kind == 2:
            when.append(
                f"      - fact: {{key: bp.reading, field: systolic, gte: "
                f"{rng.randrange(120, 200)}}}"
            )
        else:
            when.append(
                "      - path: {to: 'protocol:immediate_hospital_visit', "
                "via: 'condition:asthma', min_weight: 0.9}"
            )
            when.append("      - context: {local_time: {outside: ['06:00', '22:00']}}")
        lines += [
            f"  - id: bench.r{i}",
            "    when:",
            *when,
            f"    then: {{action: {rng.choice(ACTIONS)}}}",
            f"    reason_code: R{i}",
            f"    explain: rule {i}",
        ]
    return "\n".join(lines) + "\n"


def health_domain() -> str:
    """The shipped health domain's actions, its default decision the benchmark's table (the
    shipped ``triage`` table is left out)."""
    shipped = (builtin("examples") / "rules" / "health" / "domain.yaml").read_text()
    return shipped.replace("default_decision: triage", "default_decision: bench")


def history(count: int, seed: int = 5) -> list[dict[str, Any]]:
    """One user's ``count`` facts over a day, each key mostly restated by the source owning it.

    Conditions come from the health record (``system``), blood pressure from a device
    (``behavior``, a state that expires), the child's age from the profile, seat and product
    interest from dialogue and browsing; one write in twenty is another source agreeing, so
    keys carry several live claims without a conflict that would freeze them.
    """
    rng = random.Random(seed)
    conditions = ["condition:asthma", "condition:hypertension"]
    made = []
    step = timedelta(seconds=max(1, 86_000 // max(count, 1)))
    for i in range(count):
        choice = i % 5
        if choice == 0:
            if rng.random() < 0.05:
                conditions = sorted({*conditions, f"condition:{rng.choice(CONDITIONS)}"})
            domain, key, value, source = "health", "medical.conditions", conditions, "system"
        elif choice == 1:
            reading = {"systolic": rng.randrange(125, 175), "diastolic": rng.randrange(70, 95)}
            domain, key, value, source = "health", "bp.reading", reading, "behavior"
        elif choice == 2:
            domain, key, value, source = "travel", "seat.preference", "window", "dialogue"
        elif choice == 3:
            product = f"product:{rng.choice(['iphone_16', 'mate_70'])}"
            domain, key, value, source = "commerce", "product.viewed", product, "behavior"
        else:
            domain, key, value, source = "health", "child.age", 4, "profile"
        if choice != 1 and rng.random() < 0.05:
            source = "dialogue" if source != "dialogue" else "profile"
        made.append(
            {
                "user_id": "bench",
                "domain": domain,
                "key": key,
                "value": value,
                "source": source,
                "confidence": round(rng.uniform(0.9, 1.0), 3),
                "observed_at": (START + i * step).isoformat(),
                "provenance": CONSENT,
            }
        )
    return made


class RawHost(Host):  # type: ignore[misc]
    """durable-rules with no threads and actions that do nothing: the matcher's own cost."""

    def _run(self) -> None:
        return None

    def get_action(self, name: str) -> Any:
        return lambda c: None


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def timed(fn: Any) -> tuple[Any, float, float]:
    """The call's result, its wall time and its CPU time, in ms."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def python_runner(engine: Engine, clock: FrozenClock, runs: int) -> tuple[list[float], float]:
    """CPU per decision with the Python twin of durable-rules as the matcher, where it exists.

    Each context is decided with the twin (timed), then with durable-rules at the same clock
    time (not timed): the share of runs with the same status, action and fired rules is
    reported too. The twin decides first, at a time no decision was made at yet, as the warm
    durable-rules runs do: work keyed by the decision's time (the claims' weights at that
    time) is not yet done, where the durable-rules decision right before it at the same time
    would have left it done and flattered the twin.
    """
    try:
        from memkg.rules.python_runner import PythonRuleRunner
    except ImportError:  # a revision without the twin
        return [], 0.0
    evaluator = engine.intent.rules.evaluator
    durable = evaluator.runner
    twin = PythonRuleRunner.for_tables(list(evaluator.bundle.tables.values()))
    cpus, same = [], 0
    for i in range(runs):
        clock.advance(timedelta(seconds=1))
        context = {"symptom": SYMPTOMS[i % len(SYMPTOMS)]}
        evaluator.runner = twin
        got, _wall, cpu = timed(lambda c=context: engine.decide("bench", "health", c,
                                                                decision="bench"))  # fmt: skip
        cpus.append(cpu)
        evaluator.runner = durable
        expected = engine.decide("bench", "health", context, decision="bench")
        same += (got.result.status, got.result.action, [c.rule_id for c in got.candidates]) == (
            expected.result.status, expected.result.action,
            [c.rule_id for c in expected.candidates],
        )  # fmt: skip
    evaluator.runner = durable
    return cpus, same / runs


def concurrent(engine: Engine, threads: int, runs: int, figures: Figures) -> None:
    """Decisions from several threads at once: how many commits the decision log needed."""
    log = engine.decision_log
    before = getattr(log, "commits", None)
    per_thread = max(runs // threads, 1)

    def work(n: int) -> None:
        for i in range(per_thread):
            context = {"symptom": SYMPTOMS[(n + i) % len(SYMPTOMS)]}
            engine.decide("bench", "health", context, decision="bench")

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    start = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - start
    total = per_thread * threads
    figures.add(f"decision.threads{threads}_per_s", total / elapsed, "decisions/s")
    if before is not None:
        commits = getattr(log, "commits", 0) - before
        figures.add("decision.commits_per_decision", commits / total, "", f"{threads} threads")


def checkpoint_cpu(path: Path) -> float | None:
    """CPU (ms) the file's WAL checkpoint thread has spent so far, where it has one: the
    copying the commits no longer do inline (counted in a decision's CPU only when it runs
    while that decision does)."""
    try:
        from memkg.sqlitefile import checkpointer_of
    except ImportError:  # a revision whose commits checkpoint inline
        return None
    checkpointer = checkpointer_of(path)
    return None if checkpointer is None else checkpointer.cpu_seconds * 1e3


def _takes_position(engine: Any) -> bool:
    return "as_of" in inspect.signature(engine.intent._input).parameters


def _forget(engine: Any, user: str) -> None:
    """Make the user not resident (older code kept its caches on the engine itself)."""
    projections = getattr(engine, "projections", None)
    (projections.forget if projections is not None else engine._forget)(user)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--facts", type=int, default=1000, help="the user's facts (1000)")
    parser.add_argument("--rules", type=int, default=200, help="rules in the table (200)")
    parser.add_argument("--runs", type=int, default=300, help="warm decisions timed (300)")
    parser.add_argument("--cold-runs", type=int, default=30, help="cold decisions timed (30)")
    parser.add_argument(
        "--quick", action="store_true", help="a quick profile: 80 warm and 10 cold decisions"
    )
    parser.add_argument(
        "--log",
        choices=("sqlite", "memory"),
        default="sqlite",
        help="decision log: durable SQLite in the store's file (default) or in memory",
    )
    parser.add_argument(
        "--threads", type=int, default=4, help="threads deciding at once, after the timed runs (4)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.cold_runs = min(args.runs, 80), min(args.cold_runs, 10)
    figures = Figures()

    with tempfile.TemporaryDirectory(prefix="memkg-bench-") as tmp:
        root = Path(tmp)
        for name in ("schemas", "ontology"):
            shutil.copytree(builtin("examples") / name, root / name)
        (root / "rules" / "health").mkdir(parents=True)
        (root / "rules" / "health" / "domain.yaml").write_text(health_domain())
        (root / "rules" / "health" / "bench.yaml").write_text(rule_file(args.rules))
        made = history(args.facts)
        clock = FrozenClock(START + timedelta(days=1))
        config = EngineConfig(roots=(root,), shacl=False)
        if args.log == "sqlite":
            engine = Engine.open(root / "bench.db", clock=clock, config=config)
        else:
            engine = Engine(clock=clock, config=config)
        for offset in range(0, len(made), 100):
            engine.ingest_many(made[offset : offset + 100])
        facts = len(engine.read_events("bench"))
        table = engine.intent.rules.bundle.tables[("health", "bench")]
        raw = RawHost()
        raw.set_rulesets({"bench": copy.deepcopy(compile_table(table))})

        engine.decide("bench", "health", {"symptom": "fever"}, decision="bench")  # warm caches
        # as memkg's servers do once started (``memkg.heap.settle``; written out here because
        # the revision compared with has no such function): what start-up loaded leaves the
        # collector's full walks, which otherwise land on whichever decision is running
        gc.collect()
        gc.freeze()
        checkpointed = checkpoint_cpu(root / "bench.db")
        walls, cpus, matched, statuses = [], [], [], collections.Counter[str]()
        fired = 0
        for i in range(args.runs):
            clock.advance(timedelta(seconds=1))
            context = {"symptom": SYMPTOMS[i % len(SYMPTOMS)]}
            decision, wall, cpu = timed(
                lambda c=context: engine.decide("bench", "health", c, decision="bench")
            )
            walls.append(wall)
            cpus.append(cpu)
            statuses[decision.result.status.value] += 1
            fired += len(decision.candidates)
            rules = engine.intent.rules
            graph = engine.user_graph("bench")
            # what the decision sent the rules (older code also took the log position: the
            # harness runs on the revision it compares with too)
            at = (graph.seq,) if _takes_position(engine) else ()
            inp = engine.intent._input(rules, table, "bench", context, graph, *at, clock.now())
            messages = rules.evaluator.messages(table, inp)
            sid = f"raw{i}"
            batch = [{**m, "sid": sid, "id": f"{sid}.{j}"} for j, m in enumerate(messages)]
            start = time.process_time()  # CPU, as the decision it is compared with
            raw.assert_facts("bench", batch)
            raw.delete_state("bench", sid)
            matched.append((time.process_time() - start) * 1e3)

        if checkpointed is not None:
            checkpointed = (checkpoint_cpu(root / "bench.db") or 0.0) - checkpointed
        python_cpus, same = python_runner(engine, clock, args.runs)

        # each cold decision paired with a warm one of the same context right after it (the
        # caches a context's decision keeps are then in place, as in the warm runs above): the
        # machine's speed drifts between those runs and these (by a third at times on shared
        # cores), and a ratio of two moments would measure the drift too
        cold_walls, cold_cpus, paired_warm = [], [], []
        for i in range(args.cold_runs):
            context = {"symptom": SYMPTOMS[i % len(SYMPTOMS)]}
            clock.advance(timedelta(seconds=1))
            _forget(engine, "bench")
            _decision, wall, cpu = timed(
                lambda c=context: engine.decide("bench", "health", c, decision="bench")
            )
            cold_walls.append(wall)
            cold_cpus.append(cpu)
            clock.advance(timedelta(seconds=1))
            paired_warm.append(
                timed(lambda c=context: engine.decide("bench", "health", c, decision="bench"))[2]
            )
        # an agent's turn writes what it learned, then decides: each decision right after a
        # write to the user (the history's next observations, every kind of write in turn),
        # paired with a warm decision of the same context right after it, as above
        after_cpus, after_warm = [], []
        later = history(args.facts + args.runs // 2, seed=6)[args.facts :]
        for i, observation in enumerate(later):
            context = {"symptom": SYMPTOMS[i % len(SYMPTOMS)]}
            clock.advance(timedelta(seconds=1))
            engine.ingest({**observation, "observed_at": clock.now().isoformat()})
            after_cpus.append(
                timed(lambda c=context: engine.decide("bench", "health", c, decision="bench"))[2]
            )
            clock.advance(timedelta(seconds=1))
            after_warm.append(
                timed(lambda c=context: engine.decide("bench", "health", c, decision="bench"))[2]
            )
        if args.threads > 1 and args.log == "sqlite":
            concurrent(engine, args.threads, args.runs, figures)
        engine.close()

    print(
        f"user facts: {len(made)} ({facts} events)  rules: {args.rules}  runs: {args.runs}  "
        f"decision log: {args.log}  messages per decision: {len(messages)}  "
        f"rules fired per decision: "
        f"{fired / args.runs:.1f}"
    )
    print("statuses: " + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items())))
    figures.add("decision.decided_share", statuses["decided"] / args.runs, "of runs")
    figures.add("decision.wall_p50", percentile(walls, 50), "ms")
    figures.add("decision.wall_p99", percentile(walls, 99), "ms")
    c50 = figures.add("decision.cpu_p50", percentile(cpus, 50), "ms", "goal ≤ 1 ms")
    figures.add("decision.cpu_p99", percentile(cpus, 99), "ms", "goal ≤ 5 ms")
    r50 = figures.add("decision.raw_durable_rules_p50", percentile(matched, 50), "ms", "CPU")
    figures.add("decision.ratio_to_raw_p50", c50 / r50, "x", "CPU p50 / raw CPU p50; goal ≤ 2x")
    if checkpointed is not None:
        figures.add("decision.checkpoint_cpu_per_decision", checkpointed / args.runs, "ms",
                    "the WAL checkpoint thread's CPU, over the timed decisions")  # fmt: skip
    if python_cpus:
        figures.add("decision.python_runner_cpu_p50", percentile(python_cpus, 50), "ms",
                    "goal ≤ 1 ms")  # fmt: skip
        figures.add("decision.python_runner_cpu_p99", percentile(python_cpus, 99), "ms",
                    "goal ≤ 5 ms")  # fmt: skip
        figures.add("decision.python_runner_same_outcome", same, "of runs", "as durable-rules")
    if cold_walls:
        figures.add("decision.cold_wall_p50", percentile(cold_walls, 50), "ms")
        cold = figures.add("decision.cold_cpu_p50", percentile(cold_cpus, 50), "ms")
        warm = figures.add("decision.paired_warm_cpu_p50", percentile(paired_warm, 50), "ms",
                           "a warm decision of the same context after each cold one")  # fmt: skip
        figures.add("decision.cold_to_warm_p50", cold / warm, "x",
                    "CPU, cold against the warm decisions paired with them; goal ≤ 3x")  # fmt: skip
        figures.add("decision.cold_to_all_warm_p50", cold / c50, "x",
                    "CPU, cold against the timed warm runs above")  # fmt: skip
    if after_cpus:
        after = figures.add("decision.after_write_cpu_p50", percentile(after_cpus, 50), "ms",
                            "a decision right after a write to the user")  # fmt: skip
        figures.add("decision.after_write_to_warm_p50", after / percentile(after_warm, 50), "x",
                    "CPU, against a warm one of the same context right after each")  # fmt: skip
    figures.save(args.json)


if __name__ == "__main__":
    main()
