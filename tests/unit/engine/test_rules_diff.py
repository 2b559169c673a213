"""``Engine.rules_diff``: logged decisions re-made under an old and a new rule bundle; the
verdict; ``reload_rules(require_diff=...)`` refusing a bundle whose diff BLOCKs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import memkg
from memkg import Engine
from memkg.engine.rules_diff import RulesDiffRefused
from memkg.errors import ConfigError, InvalidOperation
from memkg.rules.diff import render_text

EXAMPLES = Path(memkg.__file__).parent / "data" / "examples" / "rules"
AVOIDED = {"airline": "airline:MU"}


def _rules(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(EXAMPLES, folder)
    return folder


def _edit(folder: Path, rel: str, old: str, new: str) -> None:
    path = folder / rel
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def logged(engine: Engine) -> Engine:
    """Two travellers' booking decisions: one avoids the offered airline, one has no record."""
    engine.ingest({"user_id": "li", "domain": "travel", "key": "airline.avoided",
                   "value": ["airline:MU"], "source": "dialogue", "confidence": 0.9})  # fmt: skip
    assert engine.decide("li", "travel", AVOIDED).result.action == "suggest_other_airline"
    assert engine.decide("wu", "travel", AVOIDED).result.action == "show_standard_options"
    return engine


def test_the_same_rules_pass(logged: Engine, tmp_path: Path) -> None:
    old, new = _rules(tmp_path, "old"), _rules(tmp_path, "new")
    report = logged.rules_diff(old, new, replay=10)
    assert report.verdict == "PASS" and report.exit_status == 0
    assert report.counts["replayed"] == 2 and report.counts["unchanged"] == 2
    assert report.rule_changes == () and report.old_digest == report.new_digest
    assert [d.changed for d in report.decisions] == [(), ()]


def test_a_changed_action_blocks_and_names_the_rule(logged: Engine, tmp_path: Path) -> None:
    old, new = _rules(tmp_path, "old"), _rules(tmp_path, "new")
    _edit(new, "travel/booking.yaml", "then: {action: suggest_other_airline, urgency: normal}",
          "then: {action: show_standard_options, urgency: normal}")  # fmt: skip
    report = logged.rules_diff(old, new, replay=10)
    assert report.verdict == "BLOCK" and report.exit_status == 3
    [change] = [c for c in report.rule_changes]
    assert (change.table, change.subject, change.change) == (
        "travel/booking", "travel.offered_avoided_airline", "changed")  # fmt: skip
    li, wu = report.decisions
    assert li.user_id == "li" and li.changed == ("action",)
    assert li.responsible == ("travel.offered_avoided_airline",)
    assert (li.before.action, li.after.action) == ("suggest_other_airline",
                                                   "show_standard_options")  # fmt: skip
    assert wu.changed == ()
    [finding] = report.blocking
    assert finding.code == "decision.outcome_changed" and finding.subject == li.decision_id
    text = render_text(report)
    assert text.startswith("BLOCK: rules ") and "travel.offered_avoided_airline" in text
    # the change is intended for this table: it is allowed, and warns
    allowed = logged.rules_diff(old, new, replay=10, allow=["travel/booking"])
    assert allowed.verdict == "WARN" and allowed.findings[0].allowed


def test_a_removed_rule_falls_to_the_default(logged: Engine, tmp_path: Path) -> None:
    old, new = _rules(tmp_path, "old"), _rules(tmp_path, "new")
    path = new / "travel" / "booking.yaml"
    text = path.read_text(encoding="utf-8")
    start = text.index("  - id: travel.offered_avoided_airline")
    end = text.index("  - id: travel.offered_preferred_airline")
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    report = logged.rules_diff(old, new, replay=10)
    assert report.verdict == "BLOCK"
    li = report.decisions[0]
    assert set(li.changed) >= {"action", "reason", "rules"}
    assert li.responsible == ("travel.offered_avoided_airline",)
    assert li.after.reason_codes == ("NO_AIRLINE_PREFERENCE",)
    assert [(c.subject, c.change) for c in report.rule_changes] == [
        ("travel.offered_avoided_airline", "removed")]  # fmt: skip


def test_a_changed_reason_warns(logged: Engine, tmp_path: Path) -> None:
    old, new = _rules(tmp_path, "old"), _rules(tmp_path, "new")
    _edit(new, "travel/booking.yaml", "reason_code: AVOIDED_AIRLINE", "reason_code: AVOIDED")
    report = logged.rules_diff(old, new, replay=10)
    assert report.verdict == "WARN" and report.exit_status == 0
    [finding] = [f for f in report.findings if f.severity == "warn"]
    assert finding.code == "decision.reason_changed"
    assert "AVOIDED_AIRLINE → AVOIDED" in finding.message
    assert report.decisions[0].changed == ("reason",)


def test_a_rule_file_error_blocks_with_file_and_line(logged: Engine, tmp_path: Path) -> None:
    old, new = _rules(tmp_path, "old"), _rules(tmp_path, "new")
    _edit(new, "travel/booking.yaml", "then: {action: suggest_other_airline",
          "then: {action: no_such_action")  # fmt: skip
    report = logged.rules_diff(old, new, replay=10)
    assert report.verdict == "BLOCK" and report.new_digest is None
    assert report.counts["replayed"] == 0
    [finding] = report.blocking
    assert finding.code == "rules.invalid" and finding.file == "rules/travel/booking.yaml"
    lines = (new / "travel" / "booking.yaml").read_text(encoding="utf-8").splitlines()
    assert lines[finding.line - 1] == "  - id: travel.offered_avoided_airline"
    assert "no_such_action" in finding.message


def test_one_users_decisions_and_the_last_n(logged: Engine, tmp_path: Path) -> None:
    logged.decide("li", "travel", {"airline": "airline:CA"})
    old, new = _rules(tmp_path, "old"), _rules(tmp_path, "new")
    mine = logged.rules_diff(old, new, replay=None, user="li")
    assert [d.user_id for d in mine.decisions] == ["li", "li"]
    last = logged.rules_diff(old, new, replay=2)
    assert [d.user_id for d in last.decisions] == ["wu", "li"]
    assert logged.rules_diff(old, new, replay=0).counts["replayed"] == 0


def test_bad_arguments_are_refused(logged: Engine, tmp_path: Path) -> None:
    old = _rules(tmp_path, "old")
    with pytest.raises(ConfigError, match="no such rules folder"):
        logged.rules_diff(old, tmp_path / "missing")
    with pytest.raises(InvalidOperation, match="DOMAIN/TABLE"):
        logged.rules_diff(old, old, allow=["travel/nope"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no rule files"):
        logged.rules_diff(old, empty)


def test_reload_refuses_a_bundle_whose_diff_blocks(logged: Engine, tmp_path: Path) -> None:
    new = _rules(tmp_path, "new")
    _edit(new, "travel/booking.yaml", "then: {action: suggest_other_airline, urgency: normal}",
          "then: {action: show_standard_options, urgency: normal}")  # fmt: skip
    _edit(new, "travel/booking.cases.yaml", "action: suggest_other_airline",
          "action: show_standard_options")  # fmt: skip
    in_use = logged.intent.rules.digest
    with pytest.raises(RulesDiffRefused) as refused:
        logged.reload_rules(new, require_diff=10)
    assert refused.value.code == "rules.diff_blocked"
    assert refused.value.to_dict()["report"]["verdict"] == "BLOCK"
    assert logged.intent.rules.digest == in_use
    assert logged.decide("li", "travel", AVOIDED).result.action == "suggest_other_airline"
    logged.reload_rules(new, require_diff=10, allow=["travel"])
    assert logged.decide("li", "travel", AVOIDED).result.action == "show_standard_options"
