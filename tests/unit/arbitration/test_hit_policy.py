"""The hit-policy arbiter: each policy, every loser recorded, candidate order irrelevant."""

from __future__ import annotations

import itertools

import pytest

from memkg.arbitration.hit_policy import arbitrate
from memkg.model.decision import Candidate, HitPolicy, Output, Urgency


def cand(
    rule: str, index: int, action: str, urgency: str | None = None, **params: int
) -> Candidate:
    return Candidate(
        rule_id=rule,
        rule_index=index,
        version=1,
        reason_code=rule.upper(),
        message="",
        output=Output(
            action=action, parameters=params, urgency=Urgency(urgency) if urgency else None
        ),
    )


CANDS = [cand("a", 0, "approve"), cand("b", 1, "deny"), cand("c", 2, "ask"), cand("d", 3, "deny")]
PRIORITY = HitPolicy(kind="priority", priority=("deny", "escalate", "ask", "approve"))


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_priority_ignores_arrival_order(order: tuple[int, ...]) -> None:
    record, output = arbitrate(PRIORITY, [CANDS[i] for i in order])
    assert output is not None and output.action == "deny"
    assert record.selected == ("b",) and record.matched == ("a", "b", "c", "d")
    reasons = {s.rule_id: s.reason for s in record.suppressed}
    assert reasons == {
        "a": "approve ranks below deny in the priority list",
        "c": "ask ranks below deny in the priority list",
        "d": "same action as b, which comes earlier in the file",
    }


def test_first_and_unique() -> None:
    record, output = arbitrate(HitPolicy(kind="first"), CANDS[::-1])
    assert record.selected == ("a",) and output == CANDS[0].output
    assert {s.by for s in record.suppressed} == {("a",)}
    record, output = arbitrate(HitPolicy(kind="unique"), CANDS[:2])
    assert (
        output is None and record.selected == () and "2 rules matched" in (record.violation or "")
    )
    record, output = arbitrate(HitPolicy(kind="unique"), CANDS[:1])
    assert record.selected == ("a",) and record.violation is None


def test_priority_with_an_unlisted_action_is_a_violation() -> None:
    record, output = arbitrate(HitPolicy(kind="priority", priority=("deny",)), CANDS)
    assert output is None and "not in the priority list" in (record.violation or "")


def test_collect_aggregates() -> None:
    flags = [cand("x", 0, "flag", "low", points=10), cand("y", 1, "flag", "high", points=30)]
    policy = HitPolicy(kind="collect", action="review", aggregate="sum", of="points")
    record, output = arbitrate(policy, flags)
    assert output is not None and (output.action, output.parameters) == ("review", {"points": 40})
    assert output.urgency is Urgency.HIGH and record.selected == ("x", "y")
    _, counted = arbitrate(policy.model_copy(update={"aggregate": "count"}), flags)
    assert counted is not None and counted.parameters == {"count": 2}
    _, listed = arbitrate(policy.model_copy(update={"aggregate": "list"}), flags)
    assert listed is not None and [i["rule"] for i in listed.parameters["items"]] == ["x", "y"]


def test_nothing_matched() -> None:
    record, output = arbitrate(PRIORITY, [])
    assert output is None and record.matched == ()


def test_collect_of_numbers_past_the_float_range_is_a_violation_not_a_null() -> None:
    """``sum`` of two huge floats overflows to infinity, which a decision record (JSON) keeps
    as null: the caller would read ``points: null``. Nothing is selected instead."""
    policy = HitPolicy(kind="collect", action="review", aggregate="sum", of="points")
    huge = [cand("x", 0, "flag", points=1e308), cand("y", 1, "flag", points=1e308)]  # type: ignore[arg-type]
    record, output = arbitrate(policy, huge)
    assert output is None and record.selected == ()
    assert record.matched == ("x", "y")
    assert "sum of 'points' is not a finite number" in (record.violation or "")
    for aggregate in ("min", "max"):  # never overflow: the fold is kept
        _, folded = arbitrate(policy.model_copy(update={"aggregate": aggregate}), huge)
        assert folded is not None and folded.parameters == {"points": 1e308}


def test_collect_folds_negative_zero_and_whole_numbers_exactly() -> None:
    policy = HitPolicy(kind="collect", action="review", aggregate="sum", of="points")
    flags = [cand("x", 0, "flag", points=-5), cand("y", 1, "flag", points=0),
             cand("z", 2, "flag", points=2**70)]  # fmt: skip
    _, output = arbitrate(policy, flags)
    assert output is not None and output.parameters == {"points": 2**70 - 5}
    _, low = arbitrate(policy.model_copy(update={"aggregate": "min"}), flags)
    assert low is not None and low.parameters == {"points": -5}
