"""Every ``rules/**/*.cases.yaml`` passes, and together they make every shipped rule fire."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import Engine
from memkg.config import EngineConfig
from memkg.engine.intent_cases import run_rule_cases
from memkg.rules.cases import CaseResult, CasesReport

ENGINE = Engine(config=EngineConfig(shacl=False))
RULES = ENGINE.intent.load()
REPORT: CasesReport = run_rule_cases(ENGINE.intent, RULES, ENGINE.layers.rule_dirs())


def test_case_files_are_well_formed() -> None:
    assert REPORT.findings == []
    assert {Path(r.case.file).parent.name for r in REPORT.results} == {
        "health",
        "travel",
        "commerce",
        "finance",
    }


@pytest.mark.parametrize("result", REPORT.results, ids=lambda r: f"{r.case.file}:{r.case.line}")
def test_case(result: CaseResult) -> None:
    assert result.failures == ()


def test_every_rule_is_exercised() -> None:
    assert REPORT.uncovered_rules == []
