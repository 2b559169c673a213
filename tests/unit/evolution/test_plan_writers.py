"""Each new key of a plan has one writer: two steps, or a step and an old key no step names
(kept as it is), writing the same key would leave a user holding both of their claims, a
conflict the plan never meant. Such a plan is refused with the line of the second writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memkg.evolution.migration import MigrationError, parse_plan
from memkg.evolution.outcome import plan_problems
from memkg.model.keyspec import KeySpec
from memkg.validate.registry import SchemaRegistry
from support.schema_roots import project_copy

Groups = tuple[dict[str, KeySpec], dict[str, KeySpec]]
HEAD = "migration: m\ndomain: travel\nfrom: flight@1\nto: flight@2\n"


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> Groups:
    """flight@1 and a flight@2 that declares the same keys."""
    root = project_copy(tmp_path_factory.mktemp("root"))
    doc = json.loads((root / "schemas/travel/flight@1.json").read_text(encoding="utf-8"))
    doc["x-memkg"]["version"] = 2
    doc["$id"] = doc["$id"].replace("@1", "@2")
    (root / "schemas/travel/flight@2.json").write_text(json.dumps(doc), encoding="utf-8")
    registry = SchemaRegistry(Path(root) / "schemas")
    return registry.group("travel", "flight", 1), registry.group("travel", "flight", 2)


@pytest.mark.parametrize(
    ("steps", "line", "said"),
    [
        ("  - {key: seat.preference, rename: cabin.class}\n"
         "  - {key: airline.preferred, rename: cabin.class}\n", 7, "(also line 6)"),
        ("  - key: seat.preference\n    to:\n      - {key: cabin.class, value: {const: first}}\n"
         "  - merge: [travel.companions, airline.preferred]\n"
         "    to:\n      - {key: cabin.class, value: {const: economy}}\n", 11, "(also line 8)"),
    ],
)  # fmt: skip
def test_two_steps_that_write_one_key_are_refused(steps: str, line: int, said: str) -> None:
    with pytest.raises(MigrationError) as refused:
        parse_plan(HEAD + "steps:\n" + steps, "schemas/travel/migrations/m.yaml")
    assert refused.value.line == line
    assert "cabin.class is written by two steps" in refused.value.message and said in (
        refused.value.message)  # fmt: skip
    assert "merge" in refused.value.message  # how to join two old keys into one


def test_a_step_that_writes_a_key_kept_as_it_is_is_refused(groups: Groups) -> None:
    old, new = groups
    plan = parse_plan(HEAD + "steps:\n  - key: seat.preference\n    to:\n"
                      "      - {key: cabin.class, value: {const: economy}}\n",
                      "m.yaml")  # fmt: skip
    with pytest.raises(MigrationError) as refused:
        plan_problems(plan, old, new)
    assert refused.value.line == 8
    message = refused.value.message
    assert "cabin.class" in message and "no step reads it" in message
    assert "drop" in message and "merge" in message


def test_a_step_may_write_a_key_another_step_reads(groups: Groups) -> None:
    old, new = groups
    swap = parse_plan(HEAD + "steps:\n  - {key: seat.preference, rename: cabin.class}\n"
                      "  - {key: cabin.class, drop: replaced by the seat}\n", "m.yaml")  # fmt: skip
    plan_problems(swap, old, new)
    in_place = parse_plan(HEAD + "steps:\n  - key: cabin.class\n    to:\n"
                          "      - {key: cabin.class, value: {copy: ''}}\n", "m.yaml")  # fmt: skip
    plan_problems(in_place, old, new)
