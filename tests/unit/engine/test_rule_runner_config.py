"""The Python rule runner is chosen in configuration (``EngineConfig.rule_runner``): it makes
the decisions durable-rules makes, explanations included, on the shipped rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memkg import Engine, EngineConfig, FrozenClock
from memkg.rules.python_runner import PythonRuleRunner
from support.observations import CONSENTED

REQUESTS = [("health", {"symptom": "fever"}, None), ("health", {"drug_class": "warfarin"},
            "medication"), ("travel", {"airline": "airline:MU"}, None)]  # fmt: skip


def _decisions(runner: str) -> list[object]:
    clock = FrozenClock(datetime(2026, 5, 1, 14, 15, tzinfo=UTC))
    with Engine(clock=clock, config=EngineConfig(rule_runner=runner)) as engine:  # type: ignore[arg-type]
        for key, value, domain in (("child.age", 3, "health"),
                                   ("medical.conditions", ["condition:asthma"], "health"),
                                   ("medication.current", ["aspirin", "metformin"], "health"),
                                   ("airline.avoided", ["airline:MU"], "travel")):  # fmt: skip
            engine.ingest({"user_id": "u", "domain": domain, "key": key, "value": value,
                           "source": "profile", **CONSENTED})  # fmt: skip
        ran = engine.intent.rules.evaluator.runner
        assert isinstance(ran, PythonRuleRunner) == (runner == "python")
        made = [engine.decide("u", d, ctx, decision=name) for d, ctx, name in REQUESTS]
        return [(m.result, m.explanation.selected, m.explanation.why_not) for m in made]


def test_the_python_runner_decides_as_durable_rules() -> None:
    durable, python = _decisions("durable"), _decisions("python")
    assert [r for r, _, _ in durable] == [r for r, _, _ in python]
    assert durable == python


def test_an_unknown_runner_is_refused() -> None:
    with pytest.raises(ValidationError):
        EngineConfig(rule_runner="fast")  # type: ignore[arg-type]
