"""``memkg decide | explain | replay | decisions | rules lint | rules test`` end to end."""

from __future__ import annotations

import io
import json
from pathlib import Path

from memkg.cli import main


def run(db: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--db", str(db), *argv], out=out)
    return code, out.getvalue()


def test_decide_explain_replay_decisions(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    obs = tmp_path / "obs.jsonl"
    obs.write_text(
        json.dumps(
            {
                "user_id": "li",
                "domain": "travel",
                "key": "airline.avoided",
                "value": ["airline:MU"],
                "source": "dialogue",
                "confidence": 0.9,
            }
        )
        + "\n"
    )
    assert run(db, "ingest", str(obs))[0] == 0
    code, out = run(
        db, "decide", "li", "--domain", "travel", "--context", '{"airline": "airline:MU"}'
    )
    decided = json.loads(out)
    assert code == 0 and decided["action"] == "suggest_other_airline"
    code, text = run(db, "explain", decided["decision_id"])
    assert code == 0 and "airline.avoided is airline:MU" in text
    code, md = run(db, "explain", decided["decision_id"], "--format", "md")
    assert md.startswith("## travel / booking")
    code, out = run(db, "replay", decided["decision_id"])
    assert code == 0 and json.loads(out)["reproduced"] is True
    code, out = run(db, "decisions", "li")
    assert [d["decision_id"] for d in json.loads(out)["decisions"]] == [decided["decision_id"]]
    code, out = run(db, "decisions", "li", "--before", decided["decision_id"])
    assert code == 0 and json.loads(out)["decisions"] == []
    code, out = run(db, "decisions", "li", "--before", "dec_none")
    assert code != 0 and json.loads(out)["error"] == "decision.not_found"
    code, out = run(db, "decide", "li", "--domain", "travel", "--context", '{"airline": 5}')
    assert code == 3 and json.loads(out)["status"] == "invalid_input"


def test_decide_takes_the_session_and_turn(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    obs = tmp_path / "obs.jsonl"
    seat = {"user_id": "li", "domain": "travel", "key": "seat.preference", "source": "dialogue"}
    lines = [{**seat, "value": "aisle"},
             {**seat, "value": "window", "scope": "turn", "session_id": "s9",
              "provenance": {"source_ref": "t3"}}]  # fmt: skip
    obs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run(db, "ingest", str(obs))[0] == 0
    offers = ("decide", "li", "--domain", "travel", "--decision", "offers")
    _, out = run(db, *offers, "--session", "s9", "--turn", "t3")
    assert "offer_window_seat" in out
    _, out = run(db, *offers)
    assert "offer_window_seat" not in out


def test_rules_lint_and_test(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    code, out = run(db, "rules", "lint")
    assert code == 0 and json.loads(out) == {"ok": True, "findings": []}
    code, out = run(db, "rules", "test", "--coverage")
    report = json.loads(out)
    assert code == 0 and report["passed"] and report["uncovered_rules"] == []
    assert "uncovered_conditions" in report
    bad = tmp_path / "rules" / "health"
    bad.mkdir(parents=True)
    (bad / "domain.yaml").write_text("actions: {go: {description: go}}\n")
    (bad / "t.yaml").write_text(
        "hit_policy: first\nrules:\n  - id: health.x\n    when: []\n"
        "    then: {action: fly}\n    reason_code: X\n    explain: x\n"
    )
    code, out = run(db, "rules", "lint", str(tmp_path / "rules"))
    findings = json.loads(out)["findings"]
    assert code == 1 and [(f["code"], f["line"]) for f in findings] == [("rule.unknown_action", 3)]
