"""durable-rules used as a matcher: the quirks DESIGN section 7 and our probes found."""

from __future__ import annotations

from typing import Any

import pytest

from memkg.rules.compiler import SINK, compile_table
from memkg.rules.durable_runner import DurableRunner, RuleEvaluationError, _MatcherHost
from memkg.rules.loader import load_bundle

DOMAIN = "actions:\n  go: {description: go}\ncontext:\n  symptom: {type: string}\n"
TABLE = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.no_allergy
    when:
      - not: {fact: {key: medical.allergies}}
      - context: {symptom: fever}
    then: {action: go}
    reason_code: A
    explain: x
  - id: t.young
    when:
      - fact: {key: child.age, lt: 6}
    then: {action: go}
    reason_code: B
    explain: x
"""


def runner() -> DurableRunner:
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": TABLE})
    assert problems == []
    return DurableRunner({"t.x": compile_table(bundle.tables[("t", "x")])})


CTX = {"t": "context", "symptom": "fever", "not_0_0": 1}
"""The context as the evaluator sends it: ``not_0_0`` says rule 0's ``not`` holds."""


def fired(messages: list[dict[str, Any]]) -> list[str]:
    return sorted(f.rule for f in runner().run("t.x", messages))


def test_a_message_no_rule_wants_does_not_hide_other_matches() -> None:
    # without the sink rule, durable-rules reports the batch as not handled and runs no action
    stray = {"t": "fact", "key": "other.key", "value": "text"}
    assert fired([stray, {"t": "fact", "key": "child.age", "value": 3}, CTX]) == ["r0", "r1"]


def test_negations_are_flags_on_the_context_not_durable_patterns() -> None:
    allergy = {"t": "fact", "key": "medical.allergies", "value": "allergen:peanut"}
    assert fired([allergy, {**CTX, "not_0_0": 0}]) == []
    assert fired([allergy, CTX]) == ["r0"]
    compiled = compile_table(
        load_bundle({"t/domain.yaml": DOMAIN, "t/x.yaml": TABLE})[0].tables[("t", "x")]
    )
    assert "$not" not in str(compiled)


def test_sessions_are_deleted_and_many_evaluations_run() -> None:
    r = runner()
    for _ in range(1_500):  # more than the 1,024 live sessions a ruleset holds
        assert [f.rule for f in r.run("t.x", [CTX])] == ["r0"]


def test_an_exception_inside_an_action_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: _MatcherHost, name: str) -> Any:
        def act(c: Any) -> None:
            raise ValueError("boom")

        return act

    monkeypatch.setattr(_MatcherHost, "get_action", broken)
    with pytest.raises(RuleEvaluationError, match="boom"):
        runner().run("t.x", [CTX])


def test_the_sink_never_fires_and_unknown_rulesets_are_refused() -> None:
    assert SINK not in fired([{"t": "fact", "key": "x", "value": 1}, CTX])
    with pytest.raises(RuleEvaluationError):
        runner().run("nope", [CTX])
