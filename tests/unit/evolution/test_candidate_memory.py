"""What a schema check allocates does not grow with the numbers or repetitions a schema holds.

Counterexample candidates are built from a schema's bounds and patterns, and the work budget
counts steps, not bytes: a candidate list sized by `minItems`, a string sized by nested
repetitions or arrays of arrays of many items each would fill memory (and validation time)
before a unit was charged. Allocation is measured in bytes with `tracemalloc` (a ratio
between a small and a large value of the same keyword); the largest values run in a child
process under an address-space limit, so a regression fails the test instead of exhausting
the machine.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from memkg.evolution import check_schema_change
from memkg.evolution.generate import MAX_LENGTH, MAX_VALUES
from memkg.evolution.regex_gen import samples

Pair = Callable[[int], tuple[Any, Any]]


def _peak(run: Callable[[], object]) -> int:
    """Bytes allocated at the peak of `run`, above what was held before it."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _nested_groups(n: int) -> str:
    """Each group repeats the one before `n` times: n**4 characters from a short pattern."""
    return f"^(a{{{n}}})(\\1{{{n}}})(\\2{{{n}}})(\\3{{{n}}})$"


def _nested_arrays(n: int, leaf: Any) -> Any:
    """Arrays of at least `n` arrays of at least `n` arrays: n**3 values under `leaf`."""
    schema = leaf
    for _ in range(3):
        schema = {"type": "array", "minItems": n, "items": schema}
    return schema


PAIRS: dict[str, tuple[Pair, int]] = {
    "minItems raised": (lambda n: ({"type": "array"}, {"type": "array", "minItems": n}), 10**6),
    "minItems raised from a minimum": (
        lambda n: ({"type": "array", "minItems": 2}, {"type": "array", "minItems": n}),
        10**6,
    ),
    "minItems on any value": (lambda n: ({}, {"minItems": n}), 10**6),
    "nested repetition in a pattern": (
        lambda n: (
            {"type": "string", "pattern": f"^(((a{{{n}}}){{{n}}}){{{n}}})$"},
            {"type": "string", "maxLength": 3},
        ),
        60,
    ),
    "back-references repeated in a pattern": (
        lambda n: ({"type": "string", "pattern": _nested_groups(n)}, {"pattern": "^b"}),
        60,
    ),
    "nested arrays of many items": (
        lambda n: (_nested_arrays(n, {}), _nested_arrays(n, {"type": "integer"})),
        40,
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_allocation_does_not_grow_with_the_schema_numbers(name: str) -> None:
    pair, big = PAIRS[name]
    small_old, small_new = pair(3)
    large_old, large_new = pair(big)
    small = _peak(lambda: check_schema_change(small_old, small_new, "full"))
    large = _peak(lambda: check_schema_change(large_old, large_new, "full"))
    assert large < 2 * small + 2**20, f"{name}: {small} bytes at 3, {large} at {big}"


def test_a_counterexample_beyond_the_largest_candidate_stays_unconfirmed() -> None:
    """27 integers nested three deep are built and confirmed; 63**3 would exceed MAX_VALUES."""
    small = _nested_arrays(3, {}), _nested_arrays(3, {"type": "integer"})
    (change,) = check_schema_change(*small, "backward").changes
    assert (change.code, change.severity) == ("type.narrowed", "breaking")
    assert len(change.counterexample) >= 3 and change.counterexample_valid_under == "old"
    assert MAX_VALUES < 63**3
    large = _nested_arrays(63, {}), _nested_arrays(63, {"type": "integer"})
    report = check_schema_change(*large, "backward")
    (change,) = report.changes
    assert (change.code, change.severity) == ("type.narrowed", "unknown")
    assert change.counterexample is None and report.undecided


def test_same_verdict_whatever_the_minimum_beyond_the_candidates() -> None:
    """Raising minItems far past any candidate is reported like a small raise, with `[]`
    (the largest minimums run in the child process below)."""
    for bound in (5, 10**4):
        report = check_schema_change({"type": "array"}, {"type": "array", "minItems": bound})
        (change,) = report.breaking
        assert change.code == "array.min_items_raised"
        assert change.counterexample == [] and change.counterexample_valid_under == "old"


def test_pattern_samples_stay_within_the_longest_candidate() -> None:
    assert samples("^(ab){3}$", 8, MAX_LENGTH) == ["ababab"]
    for pattern in (_nested_groups(60), "^(((a{60}){60}){60})$", "(a{64}){16}x"):
        found = samples(pattern, 16, MAX_LENGTH)
        assert all(len(text) <= MAX_LENGTH for text in found), pattern
    assert _peak(lambda: samples(_nested_groups(60), 16, MAX_LENGTH)) < 16 * MAX_LENGTH * 8


_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from memkg.evolution import check_schema_change
    for old, new, mode, dialect in json.loads(sys.argv[1]):
        report = check_schema_change(old, new, mode, default_dialect=dialect, budget=5_000)
        assert 0 < report.work <= 5_000
        print(json.dumps([[c.code, c.counterexample] for c in report.breaking]))
    """
)


def test_the_largest_bounds_check_within_a_gigabyte() -> None:
    """Bounds a schema may hold (up to a double's range) on keywords that size candidates, and
    a pattern standing for 64**6 characters, checked in a child limited to a gigabyte."""
    raised = [[{"type": "array"}, {"type": "array", "minItems": b}, "backward", "2020-12"]
              for b in (2**63, 1e308, 2**1023)]  # fmt: skip
    cases: list[list[Any]] = []
    for bound in (2**63, 1e308, 2**1023):
        cases += [
            [{}, {"minItems": bound}, "backward", "2020-12"],
            [{"type": "array", "items": {"type": "integer"}}, {"minItems": bound}, "full",
             "draft-07"],
            [{"minItems": bound}, {}, "forward", "draft-04"],
            [{"type": "string"}, {"minLength": bound}, "full", "2019-09"],
            [{"type": "object"}, {"minProperties": bound}, "full", "2020-12"],
            [{}, {"maxItems": bound, "uniqueItems": True, "contains": {}}, "full", "2020-12"],
        ]  # fmt: skip
    six_groups = "^(a{64})" + "".join(f"(\\{i}{{64}})" for i in range(1, 6)) + "$"
    cases.append([{"type": "string", "pattern": six_groups}, {"type": "string"}, "full", "2020-12"])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(raised + cases)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(reports) == len(raised) + len(cases)
    assert reports[: len(raised)] == [[["array.min_items_raised", []]]] * len(raised)
