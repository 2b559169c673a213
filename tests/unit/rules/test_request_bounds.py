"""A decision context JSON encoders choke on (huge integers, deep nesting) is refused."""

from __future__ import annotations

import math

import pytest

from memkg import DecisionStatus, Engine
from memkg.rules.validation import bounded_context


def test_an_integer_beyond_64_bits_is_bounded_like_any_value() -> None:
    bounded = bounded_context({"airline": 10**400, "long": 10**3000, "small": 7})
    assert bounded["small"] == 7 and bounded["airline"] == 10**400  # 401 bytes of JSON
    assert bounded["long"]["bytes"] == 3001  # too long to log: its size and digest


def _nested(depth: int) -> object:
    value: object = "airline:MU"
    for _ in range(depth):
        value = [value]
    return value


def test_a_value_too_deep_for_json_tools_is_logged_as_a_marker() -> None:
    assert bounded_context({"airline": _nested(5_000)})["airline"] == {"depth": 33}
    assert bounded_context({"airline": _nested(33)})["airline"] == {"depth": 33}
    assert bounded_context({"airline": _nested(32)})["airline"] == _nested(32)


@pytest.mark.parametrize("value", [10**400, _nested(32), _nested(254), _nested(5_000)])
def test_decide_refuses_a_context_value_json_tools_choke_on(engine: Engine, value: object) -> None:
    decision = engine.decide("u1", "travel", {"airline": value})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    assert engine.replay(decision.decision_id).reproduced  # read back from the log, replayed


@pytest.mark.parametrize("amount", [math.inf, math.nan])
def test_decide_refuses_a_context_number_that_is_not_finite(engine: Engine, amount: object) -> None:
    # durable-rules read NaN as null and could not read Infinity at all (the evaluation failed)
    decision = engine.decide("u1", "finance", {"amount": amount, "product_type": "savings"})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    assert any("finite" in p for p in decision.problems), decision.problems
    assert engine.replay(decision.decision_id).reproduced


def test_a_context_field_is_checked_by_one_validator_per_bundle(engine: Engine) -> None:
    from jsonschema import Draft202012Validator

    from memkg.rules.validation import request_problems

    bundle = engine.intent.rules.bundle
    spec = bundle.domains["travel"]
    table = bundle.table("travel", None)
    name = sorted(spec.context)[0]
    kept = spec.context_validator(name)
    for value in ("x", 3, None, ["a"], {"b": 1}):
        problems = request_problems(bundle, "travel", None, table, {name: value})
        fresh = [
            f"context.{name}: {e.message[:300]}"
            for e in Draft202012Validator(spec.context[name]).iter_errors(value)
        ]
        assert problems == fresh  # what a validator built for the request says
    assert spec.context_validator(name) is kept  # built once, on first use


def test_a_negative_zero_is_logged_as_zero_wherever_it_sits() -> None:
    """PostgreSQL's jsonb has no -0.0: the context is logged as any log gives it back."""
    bounded = bounded_context({"price": -0.0, "legs": [{"km": -0.0}, 1.5], "text": "-0.0"})
    assert bounded == {"price": 0.0, "legs": [{"km": 0.0}, 1.5], "text": "-0.0"}
    assert math.copysign(1, bounded["price"]) == 1
    assert math.copysign(1, bounded["legs"][0]["km"]) == 1
