"""Reloading rules: a bundle that fails lint or its cases is refused and the old one stays."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import ConfigError, Engine, FrozenClock, NotFound
from memkg.config import EngineConfig
from memkg.engine.intent import RulesRefused
from memkg.roots import builtin

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)


@pytest.fixture
def rules_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(builtin("examples") / "rules", folder)
    return folder


def engine() -> Engine:
    return Engine(clock=FrozenClock(NOW), config=EngineConfig(shacl=False))


def test_a_passing_bundle_is_swapped_in(rules_copy: Path) -> None:
    e = engine()
    old = e.intent.rules.digest
    table = rules_copy / "travel" / "booking.yaml"
    table.write_text(table.read_text().replace("version: 1", "version: 2", 1))
    report = e.reload_rules(rules_copy)
    assert report.passed and e.intent.rules.digest != old
    made = e.decide("u", "travel", {"airline": "airline:LH"})
    assert made.revisions.rule_bundle == e.intent.rules.digest


def test_a_bundle_failing_lint_is_refused(rules_copy: Path) -> None:
    e = engine()
    old = e.intent.rules.digest
    table = rules_copy / "travel" / "booking.yaml"
    table.write_text(
        table.read_text().replace("suggest_other_airline, urgency", "teleport, urgency")
    )
    with pytest.raises(RulesRefused) as refused:
        e.reload_rules(rules_copy)
    assert refused.value.findings[0].code == "rule.unknown_action"
    assert e.intent.rules.digest == old


def test_a_bundle_failing_its_cases_is_refused(rules_copy: Path) -> None:
    e = engine()
    old = e.intent.rules.digest
    table = rules_copy / "health" / "triage.yaml"
    table.write_text(
        table.read_text().replace("fact: {key: child.age, lt: 6}", "fact: {key: child.age, lt: 2}")
    )
    with pytest.raises(RulesRefused) as refused:
        e.reload_rules(rules_copy)
    assert any("book_emergency_appointment" in f for f in refused.value.failures)
    assert e.intent.rules.digest == old


def test_old_decisions_replay_with_their_own_bundle(rules_copy: Path) -> None:
    e = engine()
    before = e.decide("u", "travel", {"airline": "airline:LH"})
    table = rules_copy / "travel" / "booking.yaml"
    table.write_text(table.read_text().replace("version: 1", "version: 2", 1))
    e.reload_rules(rules_copy)
    assert e.replay(before.decision_id).reproduced


def test_invalid_requests_are_decisions_too() -> None:
    e = engine()
    made = e.decide("u", "health", {"symptom": "sneezing", "local_time": "12:00"})
    assert made.status.value == "invalid_input" and len(made.problems) == 2
    # a domain no schema declares is a typo, not a request: refused, as reads refuse it
    with pytest.raises(NotFound) as unknown:
        e.decide("u", "astrology")
    assert unknown.value.code == "domain.unknown"
    assert [d.status.value for d in e.decisions("u")] == ["invalid_input"]


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("root", "give its rules folder, {root}/rules"),
        ("domain", "give the rules folder that holds it, {root}/rules"),
        ("empty", "a rules folder holds <domain>/domain.yaml and <domain>/<name>.yaml"),
        ("other", "a rules folder holds <domain>/domain.yaml and <domain>/<name>.yaml"),
    ],
)
def test_reloading_a_folder_that_is_not_a_rules_folder_is_refused_saying_which_is_expected(
    tmp_path: Path, given: str, says: str
) -> None:
    """A root, or one domain's folder, is an easy slip: reloading it reported success and
    reloaded nothing, or failed on a subfolder's name; the CLI refuses the same paths."""
    root = tmp_path / "root"
    shutil.copytree(builtin("examples") / "rules", root / "rules")
    (root / "schemas").mkdir()
    (tmp_path / "empty").mkdir()
    (tmp_path / "other" / "Not A Domain").mkdir(parents=True)  # as /tmp holds: a folder no
    (tmp_path / "other" / "notes").mkdir()  # domain is named after, and one with YAML in it
    (tmp_path / "other" / "notes" / "list.yaml").write_text("- one\n")
    folder = {"root": root, "domain": root / "rules" / "health"}.get(given, tmp_path / given)
    e = engine()
    old = e.intent.rules.digest
    with pytest.raises(ConfigError) as refused:
        e.reload_rules(folder)
    assert refused.value.code == "rules.missing"
    assert refused.value.message.startswith(f"no rule files found in {folder}")
    assert says.format(root=root) in refused.value.message
    assert e.intent.rules.digest == old
