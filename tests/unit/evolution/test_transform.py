"""The migration mapping language: operators, conditions, and what it refuses to parse."""

from __future__ import annotations

from typing import Any

import pytest

from memkg.evolution.transform import Ask, Unmappable, Value, evaluate, expr_problems, holds

LEVEL: dict[str, Any] = {
    "cases": [{"when": {"contains_any": ["no_organ_meat", "vegan"]}, "then": {"const": "never"}}]
}


def test_copy_reads_a_json_pointer_and_a_missing_path_is_no_evidence() -> None:
    assert evaluate({"copy": ""}, [1]) == Value([1])
    assert evaluate({"copy": "/a~1b/0"}, {"a/b": ["x"]}) == Value("x")
    assert isinstance(evaluate({"copy": "/level"}, {"other": 1}), Unmappable)


def test_map_works_item_by_item_and_removes_items_mapped_to_null() -> None:
    expr = {"map": {"values": {"no_organ_meat": None, "vegan": "plant_based"}}}
    assert evaluate(expr, ["vegan", "halal", "no_organ_meat"]) == Value(["plant_based", "halal"])
    assert evaluate(expr, "vegan") == Value("plant_based")
    assert isinstance(evaluate(expr, "no_organ_meat"), Unmappable)


def test_map_else_controls_values_the_plan_does_not_name() -> None:
    strict = {"map": {"values": {"a": "A"}, "else": "unmappable"}}
    assert evaluate(strict, ["a"]) == Value(["A"])
    assert evaluate(strict, ["a", "b"]) == Unmappable("the plan maps no value for 'b'")
    assert evaluate({"map": {"values": {"a": "A"}, "else": "drop"}}, ["a", "b"]) == Value(["A"])


def test_cases_without_otherwise_never_guess() -> None:
    assert evaluate(LEVEL, ["vegan"]) == Value("never")
    assert isinstance(evaluate(LEVEL, ["halal"]), Unmappable)
    honest = {**LEVEL, "otherwise": {"unknown": "unknown"}}
    assert evaluate(honest, ["halal"]) == Value("unknown", unknown=True)
    asking = {**LEVEL, "otherwise": {"ask": "Do you eat organ meat?"}}
    assert evaluate(asking, ["halal"]) == Ask("Do you eat organ meat?")


def test_object_carries_unknown_and_stops_at_the_first_gap() -> None:
    expr = {"object": {"level": {**LEVEL, "otherwise": {"unknown": "unknown"}},
                       "exceptions": {"const": []}}}  # fmt: skip
    assert evaluate(expr, ["halal"]) == Value({"level": "unknown", "exceptions": []}, unknown=True)
    assert isinstance(evaluate({"object": {"level": LEVEL}}, ["halal"]), Unmappable)


@pytest.mark.parametrize(
    ("cond", "value", "expected"),
    [
        ({"equals": 3}, 3, True),
        ({"in": ["a", "b"]}, "b", True),
        ({"contains": "x"}, ["x"], True),
        ({"contains": "x"}, "x", False),
        ({"contains_all": ["x", "y"]}, ["x"], False),
        ({"path": "/a", "exists": True}, {"a": None}, True),
        ({"path": "/a", "exists": False}, {}, True),
        ({"path": "/a", "equals": 1}, {}, False),
    ],
)
def test_conditions(cond: dict[str, Any], value: Any, expected: bool) -> None:
    assert holds(cond, value) is expected


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ({"eval": "x + 1"}, "unknown operator 'eval'"),
        ({"copy": "level"}, "copy takes a JSON pointer"),
        ({"const": 1, "copy": ""}, "an expression is a mapping with one of"),
        ({"map": {"values": {}, "else": "guess"}}, "map takes from, values and else"),
        ({"cases": [{"when": {"resembles": "x"}, "then": {"const": 1}}]}, "a condition is"),
        ({"cases": [], "otherwise": {"const": 1}}, "cases is a list"),
        (
            {"cases": [{"when": {"equals": 1}, "then": {"const": 1}}], "else": {}},
            "only `otherwise`",
        ),
        ({"object": {"a": {"ask": ""}}}, "ask takes the question"),
    ],
)
def test_malformed_expressions_are_refused(expr: dict[str, Any], message: str) -> None:
    problems = expr_problems(expr)
    assert problems and message in problems[0][1]


def test_a_well_formed_expression_has_no_problems() -> None:
    assert expr_problems({**LEVEL, "otherwise": {"unknown": "unknown"}}) == []


def test_a_map_from_numbers_and_booleans_matches_the_keys_yaml_made_text() -> None:
    """YAML mapping keys are read as text (``1:`` is "1", ``true:`` is "True"): a number or
    boolean value matches the key that spells it."""
    from memkg.evolution.migration import parse_plan

    plan = parse_plan("""migration: m
domain: d
from: g@1
to: g@2
steps:
  - key: risk.level
    to: [{key: risk.level, value: {map: {values: {1: low, 2: medium, 2.5: high}}}}]
  - key: risk.flag
    to:
      - key: risk.flag
        value: {map: {values: {true: agreed, "false": refused}, else: unmappable}}
""", "p.yaml")  # fmt: skip
    level, flag = (step.targets[0].value for step in plan.steps)
    assert [evaluate(level, v) for v in (1, 2, 2.5, 3)] == [
        Value("low"), Value("medium"), Value("high"), Value(3)]  # fmt: skip
    assert evaluate(level, [2, 1, "1"]) == Value(["medium", "low"])
    assert [evaluate(flag, v) for v in (True, False)] == [Value("agreed"), Value("refused")]
    assert evaluate(flag, 1) == Unmappable("the plan maps no value for 1")
