"""What the decision goals would take: ``decision_bench.py`` with parts of a decision left out.

The goal of a warm decision at most 2x raw durable-rules (and p50 <= 1 ms with the Python
runner) is weighed here against the parts a decision could drop, each measured by running
``decision_bench.py --quick`` with the part left out, the variants alternated round after
round, each in a process of its own:

* ``as is``: the decision as shipped;
* ``no near misses``: the explanation's ``why_not`` left empty (no near-miss scan, no
  ``why_not`` nodes), as explanations worked out only on ``explain`` would make it;
* ``no trace``: ``trace_retention=0`` (a configuration the engine has);
* ``log in memory``: the in-memory decision log (no record JSON, no ``synchronous=FULL``
  commit);
* ``all three``: the three at once: what is left is reading memory (arbitration of the keys
  read, the rules' input, the weighted view), the match, the fired rules' nodes and the
  record.

A what-if, not a configuration: ``no near misses`` replaces the evaluator's near-miss scan
in the child process, so a record made there is not one memkg would log. Figures are the
medians over the rounds of each variant's CPU p50, raw durable-rules' CPU p50 measured in
the same process, their ratio, and the Python runner's CPU p50.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("as is", "no near misses", "no trace", "log in memory", "all three")
_FIGURES = (
    ("decision.cpu_p50", "CPU p50 (ms)"),
    ("decision.raw_durable_rules_p50", "raw durable-rules (ms)"),
    ("decision.ratio_to_raw_p50", "/ raw"),
    ("decision.python_runner_cpu_p50", "Python runner p50 (ms)"),
)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of rounds")
    return value


def _child(variant: str, out: str) -> None:
    """One ``decision_bench.py --quick`` run with ``variant``'s parts left out."""
    sys.path.insert(0, str(HERE))
    import decision_bench

    from memkg import EngineConfig
    from memkg.rules import evaluator

    argv = ["--quick", "--json", out]
    if variant in ("no near misses", "all three"):
        evaluator.closest_misses = lambda *args: []  # type: ignore[assignment]
    if variant in ("no trace", "all three"):

        def traceless(**kwargs: object) -> EngineConfig:
            return EngineConfig(**{**kwargs, "trace_retention": timedelta(0)})  # type: ignore[arg-type]

        decision_bench.EngineConfig = traceless  # type: ignore[assignment]
    if variant in ("log in memory", "all three"):
        argv += ["--log", "memory"]
    decision_bench.main(argv)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=_positive, default=3, help="runs of each variant (3)")
    parser.add_argument("--quick", action="store_true", help="one round of each variant")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.out)
        return
    rounds = 1 if args.quick else args.rounds
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="memkg-floor-") as tmp:
        for r in range(rounds):
            for i, variant in enumerate(VARIANTS):
                out = Path(tmp) / f"{r}-{i}.json"
                subprocess.run(
                    [sys.executable, __file__, "--child", variant, "--out", str(out)],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                found = json.loads(out.read_text())
                runs[variant].append({k: found[k]["value"] for k, _ in _FIGURES})
    medians = {
        v: {k: statistics.median(run[k] for run in runs[v]) for k, _ in _FIGURES} for v in VARIANTS
    }
    print(f"medians of {rounds} round(s), CPU")
    print("| variant | " + " | ".join(label for _, label in _FIGURES) + " |")
    print("|---" * (len(_FIGURES) + 1) + "|")
    for variant in VARIANTS:
        cells = [f"{medians[variant][k]:.2f}" for k, _ in _FIGURES]
        print(f"| {variant} | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rounds": rounds, "medians": medians}, indent=1))


if __name__ == "__main__":
    main()
