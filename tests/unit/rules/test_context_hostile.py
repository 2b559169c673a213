"""A decision context of values no JSON reader gives back, or that the matchers read apart, is
refused as invalid input: logged in the form the log gives back, refused the same way on replay,
and never a raw exception."""

from __future__ import annotations

import datetime
import decimal
import enum
import fractions
from typing import Any

import pytest

from memkg import Decision, DecisionStatus, Engine
from memkg.rules.validation import bounded_context, request_problems

CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "advice"}
ASKED = {"product_type": "bonds", "product_risk": "balanced"}


def _budget(engine: Engine, top: Any) -> None:
    engine.ingest({"user_id": "u1", "domain": "finance", "key": "budget.range",
                   "value": {"min": 0, "max": top, "currency": "EUR"}, "source": "profile",
                   "provenance": CONSENT})  # fmt: skip


def _proposed(decision: Decision) -> list[str]:
    return [c.rule_id for c in decision.candidates]


class _Level(enum.IntEnum):
    HIGH = 6000


@pytest.mark.parametrize(
    "amount",
    [
        decimal.Decimal("6000"),  # durable-rules' JSON writer failed: a RuleEvaluationError
        fractions.Fraction(6000, 1),
        complex(6000, 1),  # the schema's minimum raised a raw TypeError
        datetime.date(2026, 5, 1),  # refused, but logged as a string: replay differed
        {6000},
        b"6000",
        object(),
    ],
    ids=lambda v: type(v).__name__,
)
def test_a_context_value_that_is_not_json_is_invalid_input(engine: Engine, amount: Any) -> None:
    _budget(engine, 5000)
    decision = engine.decide("u1", "finance", {**ASKED, "amount": amount})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    assert decision.problems == (
        f"context.amount is a {type(amount).__name__}, not a JSON value: send a string, "
        "number, boolean, null, list or object",
    )
    assert engine.decision_log.get(decision.decision_id) == decision
    assert engine.replay(decision.decision_id).reproduced


def test_a_non_json_value_nested_or_under_a_non_text_name_is_refused_too(engine: Engine) -> None:
    bounded = bounded_context({"amount": [1, {"at": datetime.date(2026, 5, 1)}],
                               "product_type": {1: "bonds"}})  # fmt: skip
    assert bounded == {
        "amount": {"not_json": "date"},
        "product_type": {"not_json": "dict with a name of type int"},
    }
    decision = engine.decide("u1", "finance", {**ASKED, "amount": [{"at": decimal.Decimal(1)}]})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    assert "context.amount is a Decimal, not a JSON value" in decision.problems[0]
    assert engine.replay(decision.decision_id).reproduced


def test_json_values_of_subclasses_and_tuples_are_read_as_the_log_gives_them_back(
    engine: Engine,
) -> None:
    """A tuple is a JSON list and an IntEnum a JSON number: the request is made on the values
    the log keeps, so its decision replays."""
    _budget(engine, 5000)
    sent = {"product_type": "bonds", "product_risk": ("balanced",), "amount": _Level.HIGH}
    bounded = bounded_context(sent)
    assert bounded == {"product_type": "bonds", "product_risk": ["balanced"], "amount": 6000}
    assert type(bounded["amount"]) is int
    refused = engine.decide("u1", "finance", sent)
    assert refused.result.status is DecisionStatus.INVALID_INPUT
    assert refused.problems[0].startswith("context.product_risk: ['balanced'] is not of type")
    assert engine.replay(refused.decision_id).reproduced
    made = engine.decide("u1", "finance", {**ASKED, "amount": _Level.HIGH})
    assert made.result.status is DecisionStatus.DECIDED
    assert "finance.over_budget" in _proposed(made)  # 6000 is over the 5000 budget
    assert engine.replay(made.decision_id).reproduced


@pytest.mark.parametrize("amount", [2**63, 10**20, -(2**63) - 1, [1, 2**64]])
def test_a_context_integer_past_64_bits_is_invalid_input(engine: Engine, amount: Any) -> None:
    """As a fact's is (``value.int_range``): durable-rules reads one as a float, so 2**63 was
    taken for equal to a budget of 2**63 - 1 (no over-budget question), where Python's
    comparison is exact."""
    _budget(engine, 2**63 - 1)
    decision = engine.decide("u1", "finance", {**ASKED, "amount": amount})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    [problem] = [p for p in decision.problems if "64-bit" in p]
    assert problem.startswith("context.amount holds an integer of ")
    assert engine.replay(decision.decision_id).reproduced


def test_the_largest_64_bit_integer_is_compared_exactly(engine: Engine) -> None:
    _budget(engine, 2**63 - 2)
    decision = engine.decide("u1", "finance", {**ASKED, "amount": 2**63 - 1})
    assert decision.result.status is DecisionStatus.DECIDED
    assert "finance.over_budget" in _proposed(decision)
    assert engine.replay(decision.decision_id).reproduced


def test_request_problems_names_every_non_json_field(engine: Engine) -> None:
    bundle = engine.intent.rules.bundle
    table = bundle.table("finance", None)
    context = bounded_context({"amount": decimal.Decimal(1), "product_type": datetime.time(1)})
    problems = request_problems(bundle, "finance", None, table, context)
    assert [p.split(" is a ")[0] for p in problems] == ["context.amount", "context.product_type"]
