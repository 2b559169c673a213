"""Cost and safety of `check_schema_change`, side by side with `jsoncompat` (a Rust core).

Two sets of schema pairs, each checked in `backward` and `forward` mode:

* the shipped pair suite (`tests/cases/schema_compat/*.yaml`), labelled: an *unsafe* verdict
  says compatible where the label says a document breaks; a *refusal* says incompatible (or
  raises) where the label says compatible;
* generated pairs (seeded): random keyword mixes and edits of them, to find slow cases. They
  carry no labels: a verdict of compatible counts as unsafe when a document generated from the
  source schema (by jsoncompat's generator) is valid under it and invalid under the other
  (jsonschema decides), which proves the break.

Prints the median and p99 CPU milliseconds per check of both tools (process time, so that other
work on a shared machine does not count; every check run once after a warm-up pass, in the
same process), the largest work count memkg used, and the verdict counts.
Goal: memkg median <= 2 ms, p99 <= 20 ms, fewer unsafe verdicts than jsoncompat.
Run: ``python benchmarks/schema_bench.py [--quick] [--pairs N] [--seed S] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

try:
    import memkg  # noqa: F401
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))

import yaml
from figures import Figures
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from memkg.errors import MemkgError
from memkg.evolution import check_schema_change

CASES = Path(__file__).resolve().parents[1] / "tests" / "cases" / "schema_compat"
ROLES = {"backward": "deserializer", "forward": "serializer"}
DIALECT_URIS = {
    "http://json-schema.org/draft-04/schema#": "draft-04",
    "http://json-schema.org/draft-06/schema#": "draft-06",
}

try:
    import jsoncompat
except ImportError:  # the dev extra installs it
    jsoncompat = None


def suite() -> list[tuple[str, Any, Any, dict[str, bool]]]:
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8")):
            labels = {"backward": case["backward"],
                      "forward": case.get("forward", not case["backward"])}  # fmt: skip
            out.append((case["name"], case["old"], case["new"], labels))
    return out


_TYPES = ["string", "integer", "number", "object", "array", "boolean", "null"]
_KEYS = ["a", "b", "c"]


def _schema(rng: random.Random, depth: int = 0) -> Any:
    if rng.random() < 0.05:
        return rng.choice([True, False])
    out: dict[str, Any] = {}
    for _ in range(rng.randint(1, 4 if depth == 0 else 2)):
        key = rng.choice(_GENERATORS)
        out.update(key(rng, depth))
    return out


def _sub(rng: random.Random, depth: int) -> Any:
    return _schema(rng, depth + 1) if depth < 2 else {"type": rng.choice(_TYPES)}


_GENERATORS = [
    lambda r, d: {"type": r.choice(_TYPES)},
    lambda r, d: {"type": r.sample(_TYPES, r.randint(1, 3))},
    lambda r, d: {"enum": r.sample(["a", "b", "c", 1, 2, None, True], r.randint(1, 4))},
    lambda r, d: {"const": r.choice(["a", 1, None])},
    lambda r, d: {r.choice(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]):
                  r.randint(-5, 20)},
    lambda r, d: {"multipleOf": r.choice([1, 2, 3, 0.5])},
    lambda r, d: {r.choice(["minLength", "maxLength", "minItems", "maxItems", "minProperties",
                            "maxProperties"]): r.randint(0, 20)},
    lambda r, d: {"pattern": r.choice(["^a", "b$", "^[a-z]+$", "^x-"])},
    lambda r, d: {"format": r.choice(["date", "email", "uuid"])},
    lambda r, d: {"properties": {k: _sub(r, d) for k in r.sample(_KEYS, r.randint(1, 3))}},
    lambda r, d: {"required": r.sample(_KEYS, r.randint(1, 2))},
    lambda r, d: {"additionalProperties": _sub(r, d)},
    lambda r, d: {"patternProperties": {"^x-": _sub(r, d)}},
    lambda r, d: {"propertyNames": {"maxLength": r.randint(1, 5)}},
    lambda r, d: {"dependentRequired": {r.choice(_KEYS): r.sample(_KEYS, 1)}},
    lambda r, d: {"dependentSchemas": {r.choice(_KEYS): _sub(r, d)}},
    lambda r, d: {"items": _sub(r, d)},
    lambda r, d: {"prefixItems": [_sub(r, d) for _ in range(r.randint(1, 2))]},
    lambda r, d: {"contains": _sub(r, d)},
    lambda r, d: {"uniqueItems": r.choice([True, False])},
    lambda r, d: {"unevaluatedItems": _sub(r, d)},
    lambda r, d: {"unevaluatedProperties": _sub(r, d)},
    lambda r, d: {r.choice(["anyOf", "oneOf", "allOf"]): [_sub(r, d) for _ in range(2)]},
    lambda r, d: {"not": _sub(r, d)},
    lambda r, d: {"if": _sub(r, d), "then": _sub(r, d), "else": _sub(r, d)},
]  # fmt: skip


def _edit(rng: random.Random, schema: Any) -> Any:
    if not isinstance(schema, dict) or not schema or rng.random() < 0.2:
        return _schema(rng)
    new = json.loads(json.dumps(schema))
    key = rng.choice(sorted(new))
    choice = rng.random()
    if choice < 0.3:
        del new[key]
    elif choice < 0.6:
        new.update(rng.choice(_GENERATORS)(rng, 1))
    elif isinstance(new[key], int) and not isinstance(new[key], bool):
        new[key] = max(0, new[key] + rng.choice([-1, 1]))
    else:
        new = {"anyOf": [new, _schema(rng)]}
    return new


def generated(count: int, seed: int) -> list[tuple[str, Any, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        old = _schema(rng)
        out.append((f"gen{i}", old, _edit(rng, old)))
    return out


def _evidence(old: Any, new: Any, mode: str) -> bool:
    """A generated document valid under the source schema and not under the target."""
    src, dst = (old, new) if mode == "backward" else (new, old)
    try:
        here, there = _validator(src), _validator(dst)
    except Exception:
        return False
    docs: list[Any] = []
    if jsoncompat is not None:
        for depth in (2, 3, 4, 5) * 5:
            try:
                docs.append(json.loads(jsoncompat.generate_value(json.dumps(src), depth)))
            except BaseException:  # a panic in its Rust core is a BaseException too
                break
    for doc in docs:
        try:
            if here.is_valid(doc) and not there.is_valid(doc):
                return True
        except Exception:
            continue
    return False


def _validator(schema: Any) -> Any:
    cls = validator_for(schema, default=Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _memkg(old: Any, new: Any, mode: str) -> tuple[bool | None, float, int]:
    start = time.process_time()
    try:
        report = check_schema_change(old, new, mode)
    except MemkgError:
        return None, (time.process_time() - start) * 1000, 0
    return report.compatible, (time.process_time() - start) * 1000, report.work


def _jsoncompat(old: str, new: str, mode: str) -> tuple[bool | None, float]:
    start = time.process_time()
    try:
        verdict = bool(jsoncompat.check_compat(old, new, ROLES[mode]))
    except BaseException:  # a panic in its Rust core is a BaseException too
        verdict = None
    return verdict, (time.process_time() - start) * 1000


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _line(label: str, times: list[float]) -> str:
    return (f"  {label:<11} median {statistics.median(times):7.3f} ms   "
            f"p99 {_pct(times, 0.99):8.3f} ms   max {max(times):8.3f} ms")  # fmt: skip


def run(pairs: list[tuple[str, Any, Any, dict[str, bool] | None]], title: str, key: str,
        figures: Figures) -> None:  # fmt: skip
    ours: list[float] = []
    theirs: list[float] = []
    counts = {tool: {"unsafe": 0, "refused": 0, "correct": 0, "error": 0, "disagree": 0}
              for tool in ("memkg", "jsoncompat")}  # fmt: skip
    most_work = 0
    for _name, old, new, labels in pairs:
        for mode in ("backward", "forward"):
            ok, ms, work = _memkg(old, new, mode)
            ours.append(ms)
            most_work = max(most_work, work)
            results = {"memkg": ok}
            if jsoncompat is not None:
                verdict, ms = _jsoncompat(json.dumps(old), json.dumps(new), mode)
                theirs.append(ms)
                results["jsoncompat"] = verdict
            broken = None
            for tool, verdict in results.items():
                tally = counts[tool]
                if verdict is None:
                    tally["error"] += 1
                if labels is None:
                    if verdict is not None and ok is not None and verdict != ok:
                        tally["disagree"] += 1
                    if verdict is True:
                        broken = _evidence(old, new, mode) if broken is None else broken
                        tally["unsafe"] += broken
                    continue
                if verdict is True and not labels[mode]:
                    tally["unsafe"] += 1
                elif verdict is not True and labels[mode]:
                    tally["refused"] += 1
                elif verdict is not None:
                    tally["correct"] += 1
    print(f"{title}: {len(pairs)} pairs x backward/forward = {len(ours)} checks")
    print(_line("memkg", ours) + f"   (most work: {most_work} units)")
    if theirs:
        print(_line("jsoncompat", theirs))
        print(f"  median ratio memkg/jsoncompat: "
              f"{statistics.median(ours) / statistics.median(theirs):.1f}x")  # fmt: skip
    figures.add(f"schema.{key}.memkg_p50", statistics.median(ours), "ms")
    figures.add(f"schema.{key}.memkg_p99", _pct(ours, 0.99), "ms")
    if theirs:
        figures.add(f"schema.{key}.jsoncompat_p50", statistics.median(theirs), "ms")
        figures.add(f"schema.{key}.jsoncompat_p99", _pct(theirs, 0.99), "ms")
    figures.add(f"schema.{key}.memkg_unsafe", counts["memkg"]["unsafe"], "checks")
    if theirs:
        figures.add(f"schema.{key}.jsoncompat_unsafe", counts["jsoncompat"]["unsafe"],
                    "checks")  # fmt: skip
    for tool, tally in counts.items():
        if tool == "jsoncompat" and jsoncompat is None:
            continue
        if pairs and pairs[0][3] is not None:
            print(f"  {tool:<11} unsafe {tally['unsafe']:4}   refused/undecided "
                  f"{tally['refused']:4}   correct {tally['correct']:4}   "
                  f"errors {tally['error']:4}")  # fmt: skip
        else:
            print(f"  {tool:<11} unsafe (proven by a generated document) {tally['unsafe']:4}   "
                  f"errors {tally['error']:4}   verdicts differing from memkg "
                  f"{tally['disagree']:4}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000, help="generated pairs (default 1000)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--quick", action="store_true", help="300 generated pairs")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    if args.quick:
        args.pairs = min(args.pairs, 300)
    if jsoncompat is None:
        print("jsoncompat is not installed (pip install -e '.[dev]'): memkg figures only")
    shipped = [(n, o, w, labels) for n, o, w, labels in suite()]
    made: list[tuple[str, Any, Any, dict[str, bool] | None]] = [
        (n, o, w, None) for n, o, w in generated(args.pairs, args.seed)
    ]
    for _, old, new, _labels in shipped[:20]:  # warm up imports and caches
        _memkg(old, new, "backward")
    figures = Figures()
    run(list(shipped), "shipped pair suite (labelled)", "suite", figures)
    run(made, f"generated pairs (seed {args.seed})", "generated", figures)
    figures.save(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
