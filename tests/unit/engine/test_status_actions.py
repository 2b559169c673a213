"""A decision whose status is not ``decided`` carries no action, unless the domain declares a
safe action for that status; the explanation says which."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.engine.rule_bundle import RulesRefused
from memkg.model.decision import DecisionStatus
from support.observations import T0

CONSENT = {"provenance": {"consent_granted": True, "consent_version": "v1"}}


def _disputed_allergy(engine: Engine) -> None:
    for value, source in ((["allergen:peanut"], "profile"), ([], "system")):
        engine.ingest({"user_id": "mei", "domain": "health", "key": "medical.allergies",
                       "value": value, "source": source, **CONSENT})  # fmt: skip


def test_needs_review_carries_no_action(engine: Engine) -> None:
    _disputed_allergy(engine)
    made = engine.decide("mei", "health", {"allergen": "allergen:peanut"}, decision="medication")
    assert made.result.status is DecisionStatus.NEEDS_REVIEW
    assert made.result.action is None and made.result.urgency is None
    assert not made.result.default_used and made.result.parameters == {}
    assert made.explanation.action is None
    assert "No action" in made.explanation.summary
    assert "approve_prescription" in made.explanation.summary  # what was held back, and why


def _rules_with_safe_action(tmp_path: Path) -> Path:
    import memkg

    root = tmp_path / "root"
    examples = Path(memkg.__file__).parent / "data" / "examples"
    for part in ("rules", "schemas"):  # a domain belongs whole to the root declaring it
        shutil.copytree(examples / part / "health", root / part / "health")
    domain = root / "rules" / "health" / "domain.yaml"
    text = domain.read_text().replace(
        "actions:\n",
        "actions:\n  refer_to_clinician:\n    description: Hand the case to a clinician\n",
        1,
    )
    domain.write_text(
        text + "status_actions:\n  needs_review: {action: refer_to_clinician, urgency: high}\n"
    )
    return root


def test_a_declared_safe_action_is_carried_and_explained(tmp_path: Path) -> None:
    config = EngineConfig(roots=(_rules_with_safe_action(tmp_path),))
    engine = Engine(config=config, clock=FrozenClock(T0))
    _disputed_allergy(engine)
    made = engine.decide("mei", "health", {"allergen": "allergen:peanut"}, decision="medication")
    assert made.result.status is DecisionStatus.NEEDS_REVIEW
    assert (made.result.action, made.result.urgency) == ("refer_to_clinician", "high")
    assert "safe action" in made.explanation.summary
    assert made.explanation.status_action == "refer_to_clinician"
    assert "refer_to_clinician" in engine.explain(made.decision_id, "text")
    assert engine.replay(made.decision_id).reproduced


def test_an_undeclared_safe_action_is_a_lint_finding(tmp_path: Path) -> None:
    root = _rules_with_safe_action(tmp_path)
    domain = root / "rules" / "health" / "domain.yaml"
    domain.write_text(domain.read_text().replace("action: refer_to_clinician", "action: shrug"))
    engine = Engine(config=EngineConfig(roots=(root,)), clock=FrozenClock(T0))
    with pytest.raises(RulesRefused) as refused:
        engine.intent.load(root / "rules")
    [finding] = refused.value.findings
    assert finding.code == "rule.unknown_action" and "shrug" in finding.message
    assert finding.file.endswith("health/domain.yaml") and finding.line > 1
