"""Decision latency for a user with 1,000 facts and 200 rules, next to raw durable-rules.

Run: ``python benchmarks/decision_bench.py [--facts 1000] [--rules 200] [--runs 300]``.
Both sides run in this process on the same rules: ``engine.decide`` (read memory, arbitrate,
weigh edges, match, choose, explain, log) and durable-rules alone asserting the messages that
decision sent (one session each, as ``decide`` does). The ratio is the figure that matters
(goal: p50 ≤ 1 ms, p99 ≤ 5 ms, at most 3× raw).
"""

from __future__ import annotations

import argparse
import copy
import random
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from durable.engine import Host

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


def rule_file(count: int, seed: int = 3) -> str:
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


def history(count: int, seed: int = 5) -> list[dict[str, Any]]:
    """A user's 1,000 facts: health, travel and commerce, restated and corrected over time."""
    rng = random.Random(seed)
    made = []
    for i in range(count):
        choice = i % 5
        if choice == 0:
            obs = (
                "health",
                "medical.conditions",
                sorted({f"condition:{rng.choice(CONDITIONS)}" for _ in range(2)}),
            )
        elif choice == 1:
            obs = ("health", "bp.reading", {"systolic": rng.randrange(110, 200), "diastolic": 80})
        elif choice == 2:
            obs = ("travel", "seat.preference", rng.choice(["window", "aisle"]))
        elif choice == 3:
            obs = ("commerce", "product.viewed", f"product:{rng.choice(['iphone_16', 'mate_70'])}")
        else:
            obs = ("health", "child.age", rng.randrange(0, 12))
        domain, key, value = obs
        made.append(
            {
                "user_id": "bench",
                "domain": domain,
                "key": key,
                "value": value,
                "source": rng.choice(["profile", "system", "behavior"]),
                "confidence": 1.0,
                "provenance": CONSENT,
            }
        )
    made.append(
        {
            "user_id": "bench",
            "domain": "health",
            "key": "medical.conditions",
            "value": ["condition:asthma"],
            "source": "system",
            "confidence": 1.0,
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("schemas", "ontology"):
            shutil.copytree(builtin("examples") / name, root / name)
        (root / "rules" / "health").mkdir(parents=True)
        health = builtin("examples") / "rules" / "health"
        shutil.copy(health / "domain.yaml", root / "rules" / "health")
        (root / "rules" / "health" / "bench.yaml").write_text(rule_file(args.rules))
        clock = FrozenClock(datetime(2026, 5, 1, 14, tzinfo=UTC))
        engine = Engine(clock=clock, config=EngineConfig(roots=(root,), shacl=False))
        for obs in history(args.facts):
            engine.ingest(obs)
            clock.advance(timedelta(seconds=30))
        facts = len(engine.memory("bench").facts)
        table = engine.intent.rules.bundle.tables[("health", "bench")]
        raw = RawHost()
        raw.set_rulesets({"bench": copy.deepcopy(compile_table(table))})

        engine.decide("bench", "health", {"symptom": "fever"}, decision="bench")  # warm caches
        decided, matched, fired = [], [], 0
        for i in range(args.runs):
            clock.advance(timedelta(seconds=1))
            context = {"symptom": SYMPTOMS[i % len(SYMPTOMS)]}
            start = time.perf_counter()
            decision = engine.decide("bench", "health", context, decision="bench")
            decided.append((time.perf_counter() - start) * 1000)
            fired += len(decision.candidates)
            rules = engine.intent.rules
            graph = engine.user_graph("bench")
            inp = engine.intent._input(
                rules, table, "bench", context, graph, graph.seq, clock.now()
            )
            messages = rules.evaluator.messages(table, inp)
            sid = f"raw{i}"
            batch = [{**m, "sid": sid, "id": f"{sid}.{j}"} for j, m in enumerate(messages)]
            start = time.perf_counter()
            raw.assert_facts("bench", batch)
            raw.delete_state("bench", sid)
            matched.append((time.perf_counter() - start) * 1000)

    p50, p99 = percentile(decided, 50), percentile(decided, 99)
    r50, r99 = percentile(matched, 50), percentile(matched, 99)
    print(
        f"user facts: {facts}  rules: {args.rules}  runs: {args.runs}  "
        f"messages per decision: {len(messages)}  rules fired per decision: "
        f"{fired / args.runs:.1f}"
    )
    print(f"decide p50: {p50:.3f} ms  p99: {p99:.3f} ms  mean: {statistics.mean(decided):.3f} ms")
    print(f"raw durable-rules p50: {r50:.3f} ms  p99: {r99:.3f} ms")
    print(f"ratio decide/raw p50: {p50 / r50:.2f}x  p99: {p99 / r99:.2f}x  (goal ≤ 3x)")
    print(
        f"goal p50 ≤ 1 ms: {'met' if p50 <= 1 else 'not met'}; "
        f"p99 ≤ 5 ms: {'met' if p99 <= 5 else 'not met'}"
    )


if __name__ == "__main__":
    main()
