"""Key groups compared key by key, and a domain's schema history read from schemas/."""

from __future__ import annotations

import json
from typing import Any

from memkg.evolution.groups import compare_groups, is_group
from memkg.evolution.history import schema_history
from support.schema_roots import ROOT


def _group(version: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (ROOT / f"schemas/health/diet@{version}.json").read_text(encoding="utf-8")
    )
    return data


def test_group_files_are_told_from_plain_schemas() -> None:
    assert is_group(_group(1))
    assert not is_group({"type": "object", "properties": {"a": {"type": "string"}}})
    assert not is_group(True)


def test_diet_v2_breaks_backward_with_a_counterexample_key_by_key() -> None:
    report = compare_groups(_group(1), _group(2), "backward")
    assert report["compatible"] is False
    assert report["group"] == {"old": "health/diet@1", "new": "health/diet@2"}
    restrictions = report["keys"]["diet.restrictions"]
    [change] = [c for c in restrictions["changes"] if c["severity"] == "breaking"]
    assert change["code"] == "enum.value_removed"
    assert change["counterexample"] == ["no_organ_meat"]
    assert report["keys"]["diet.organ_meat_tolerance"]["compatible"] is True
    forward = compare_groups(_group(1), _group(2), "forward")
    assert forward["keys"]["diet.organ_meat_tolerance"]["changes"][0]["code"] == "key.added"
    assert forward["keys"]["diet.organ_meat_tolerance"]["compatible"] is False


def test_removed_keys_and_policy_changes_are_reported() -> None:
    old, new = _group(2), _group(2)
    del new["properties"]["diet.restrictions"]
    new["properties"]["diet.organ_meat_tolerance"]["x-memkg"]["sensitivity"] = "restricted"
    report = compare_groups(old, new, "backward")
    assert report["keys"]["diet.restrictions"]["changes"][0]["code"] == "key.removed"
    policy = report["keys"]["diet.organ_meat_tolerance"]["policy_changes"]
    assert policy == {"sensitivity": {"old": "special", "new": "restricted"}}


def test_history_of_a_domain_and_of_one_key() -> None:
    domain = schema_history(ROOT, "health")
    diet = next(g for g in domain["groups"] if g["group"] == "diet")
    assert [v["version"] for v in diet["versions"]] == [1, 2]
    assert all(v["released"] for v in diet["versions"])
    assert diet["versions"][1]["keys"] == ["diet.organ_meat_tolerance", "diet.restrictions"]
    assert [m["migration"] for m in domain["migrations"]] == ["diet_organ_meat"]
    key = schema_history(ROOT, "health", "diet.organ_meat_tolerance")
    [group] = key["groups"]
    [v2] = group["versions"]
    assert v2["version"] == 2 and v2["meta"]["sensitivity"] == "special"
    restrictions = schema_history(ROOT, "health", "diet.restrictions")["groups"][0]["versions"]
    assert restrictions[1]["changes"] == [
        {"key": "diet.restrictions", "codes": ["enum.value_removed"], "breaks": ["backward"]}
    ]
    assert schema_history(ROOT, "health", "no.such")["groups"] == []
