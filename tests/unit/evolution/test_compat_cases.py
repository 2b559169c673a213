"""Data-driven schema compatibility cases from tests/cases/schema_compat."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
from jsonschema.validators import validator_for

from memkg.evolution import CompatibilityReport, check_schema_change
from memkg.userschema import bounded

CASES_DIR = Path(__file__).resolve().parents[2] / "cases" / "schema_compat"


def _load() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        cases.extend(yaml.safe_load(path.read_text(encoding="utf-8")))
    return cases


CASES = _load()


def _valid(schema: Any, doc: Any) -> bool:
    cls = validator_for(schema, default=Draft202012Validator)
    assert cls in (
        Draft4Validator,
        Draft6Validator,
        Draft7Validator,
        Draft201909Validator,
        Draft202012Validator,
    )
    # as memkg validates: multipleOf on the decimals written, not by float division
    return bool(bounded(cls)(schema, format_checker=cls.FORMAT_CHECKER).is_valid(doc))


def _undecidable_directions(case: dict[str, Any]) -> set[str]:
    flag = case.get("undecidable", False)
    if flag is True:
        return {"backward"}
    if flag in ("backward", "forward"):
        return {flag}
    if flag == "both":
        return {"backward", "forward"}
    return set()


def _assert_confirmed(report: CompatibilityReport, case: dict[str, Any]) -> None:
    schemas = {"old": case["old"], "new": case["new"]}
    with_examples = [
        c
        for c in report.changes
        if c.severity == "breaking" and c.counterexample_valid_under is not None
    ]
    assert with_examples, f"no counterexample in:\n{report.to_text()}"
    for change in with_examples:
        side = change.counterexample_valid_under
        assert side is not None
        other = "new" if side == "old" else "old"
        assert _valid(schemas[side], change.counterexample), change
        assert not _valid(schemas[other], change.counterexample), change


def test_enough_cases() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 170


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    undecidable = _undecidable_directions(case)
    expected = {"backward": case["backward"], "forward": case.get("forward", not case["backward"])}
    for direction, want in expected.items():
        report = check_schema_change(case["old"], case["new"], mode=direction)
        assert report.compatible is want, f"{direction}:\n{report.to_text()}"
        if direction in undecidable:
            assert report.undecided and not report.compatible, report.to_text()
        elif not want:
            _assert_confirmed(report, case)
        else:
            assert not report.undecided
