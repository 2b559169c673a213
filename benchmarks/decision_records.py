"""The decision records of a fixed workload, for comparing two revisions byte for byte.

Run: ``python benchmarks/decision_records.py OUT`` with a revision's ``engine/`` first on
``PYTHONPATH``, once per revision, then compare the files (``cmp``). The workload is seeded
and the clock frozen: ``decision_bench``'s user and 200 rules next to the shipped health
rules, decisions through a day (night rules fire, near misses change), with new facts written
between rounds (a child's age, a condition, a reading) so an explanation that should change
does. Each line is one record as the SQLite decision log stored it, with its
``timings.evaluate_ms`` (wall time) blanked: that is the only part that varies from run to run.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sqlite3
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decision_bench

from memkg import Engine, EngineConfig, FrozenClock
from memkg.roots import builtin

_TIMING = re.compile(r'"evaluate_ms":[-0-9.e+]+')


def workload(folder: Path, rounds: int = 6, per_round: int = 40) -> list[str]:
    for name in ("schemas", "ontology"):
        shutil.copytree(builtin("examples") / name, folder / name)
    health = folder / "rules" / "health"
    shutil.copytree(builtin("examples") / "rules" / "health", health)
    for cases in health.glob("*.cases.yaml"):
        cases.unlink()
    (health / "bench.yaml").write_text(decision_bench.rule_file(200))
    clock = FrozenClock(decision_bench.START + timedelta(days=1), seed=7)
    engine = Engine.open(
        folder / "records.db", clock=clock, config=EngineConfig(roots=(folder,), shacl=False)
    )
    made = decision_bench.history(1_000)
    for offset in range(0, len(made), 100):
        engine.ingest_many(made[offset : offset + 100])
    changes = [
        ("health", "child.age", 2, "profile"),
        ("health", "medical.conditions", ["condition:asthma", "condition:epilepsy"], "system"),
        ("health", "bp.reading", {"systolic": 190, "diastolic": 100}, "behavior"),
        ("health", "child.age", 9, "profile"),
        ("health", "medical.conditions", ["condition:diabetes_t1"], "system"),
        ("health", "bp.reading", {"systolic": 121, "diastolic": 80}, "behavior"),
    ]
    symptoms = [*decision_bench.SYMPTOMS, "breathing_difficulty", "none"]
    for round_ in range(rounds):
        for i in range(per_round):
            clock.advance(timedelta(minutes=37))
            symptom = symptoms[(i + round_) % len(symptoms)]
            context: dict[str, object] = {"symptom": symptom}
            if i % 3 == 0:
                context["temperature_c"] = 38.0 + (i % 5) * 0.5
            table = "bench" if i % 4 else "triage"
            engine.decide("bench", "health", context, decision=table)
            if i % 7 == 0:  # the same request again at once: nothing changed in between
                engine.decide("bench", "health", context, decision=table)
        domain, key, value, source = changes[round_ % len(changes)]
        clock.advance(timedelta(seconds=30))
        engine.ingest_many(
            [
                {
                    "user_id": "bench",
                    "domain": domain,
                    "key": key,
                    "value": value,
                    "source": source,
                    "confidence": 0.97,
                    "observed_at": clock.now().isoformat(),
                    "provenance": decision_bench.CONSENT,
                }
            ]
        )
    engine.close()
    with sqlite3.connect(folder / "records.db") as db:
        rows = db.execute("SELECT record FROM decisions ORDER BY rowid").fetchall()
    return [_TIMING.sub('"evaluate_ms":0', record) for (record,) in rows]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="where the records go, one per line")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memkg-records-") as tmp:
        records = workload(Path(tmp))
    text = "\n".join(records) + "\n"
    args.out.write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    print(f"{len(records)} decision records, sha256 {digest}")


if __name__ == "__main__":
    main()
