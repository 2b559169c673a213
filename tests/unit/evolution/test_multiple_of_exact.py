"""``schema check``'s proof about ``multipleOf`` agrees with the validator writes go through.

The checker proves "every multiple of the old step is one of the new" with exact fractions;
the runtime validator must judge a value the same way, or a change called compatible refuses
values the old schema let in (0.1 -> 0.01 was called backward compatible while 0.1 * 17 passed
the old schema and failed the new one).
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Any

import pytest

from memkg.evolution import check_schema_change
from memkg.userschema import validator

STEPS = [0.1, 0.01, 0.2, 0.25, 0.5, 1, 2, 3, 0.3, 1.5, 0.05, 10]


def _multiples(step: float | int) -> list[Any]:
    """Values a schema of ``step`` accepts, as a caller writes them (decimals, not products)."""
    out: list[Any] = []
    for k in (1, 2, 3, 7, 17, 101, -9):
        exact = Fraction(repr(step)) * k
        out.append(int(exact) if exact.denominator == 1 else float(exact))
    return out


@pytest.mark.parametrize(("old", "new"), list(product(STEPS, STEPS)))
def test_a_compatible_verdict_holds_for_the_runtime_validator(old: Any, new: Any) -> None:
    a, b = {"type": "number", "multipleOf": old}, {"type": "number", "multipleOf": new}
    report = check_schema_change(a, b, "backward")
    old_v, new_v = validator(a), validator(b)
    accepted = [v for v in [*_multiples(old), 17 * 0.1, 0.1 + 0.2, 19.99] if old_v.is_valid(v)]
    assert accepted, old
    if report.compatible:
        refused = [v for v in accepted if not new_v.is_valid(v)]
        assert refused == [], f"{old} -> {new} called compatible, yet {new} refuses {refused}"
    else:
        [change] = [c for c in report.changes if c.severity == "breaking"]
        assert change.code == "number.multiple_of_changed"
        assert change.counterexample is not None, report.to_text()
        assert old_v.is_valid(change.counterexample)
        assert not new_v.is_valid(change.counterexample)


def test_a_finer_decimal_step_is_backward_compatible_and_a_coarser_one_is_not() -> None:
    fine, coarse = {"type": "number", "multipleOf": 0.01}, {"type": "number", "multipleOf": 0.1}
    assert check_schema_change(coarse, fine, "backward").compatible
    report = check_schema_change(fine, coarse, "backward")
    assert not report.compatible
    assert validator(fine).is_valid(report.changes[0].counterexample)


def test_generated_multiples_are_the_decimals_a_caller_writes() -> None:
    import doctest

    from memkg.evolution import generate

    result = doctest.testmod(generate)
    assert result.failed == 0 and result.attempted > 0
    assert validator({"multipleOf": 0.1}).is_valid(generate.times(0.1, 3))
