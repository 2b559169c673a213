"""docs/authoring.md builds a working domain: every file it shows, written as shown, lints,
passes its cases and decides as the page says."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock, ValidationFailed
from memkg.cli import main

PAGE = Path(__file__).resolve().parents[1] / "docs" / "authoring.md"
T0 = datetime(2026, 5, 1, 9, tzinfo=UTC)


def files_on_the_page() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    return dict(re.findall(r"^```\w+ file=(\S+)\n(.*?)^```", text, flags=re.M | re.S))


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, json.loads(out.getvalue())


def test_the_page_builds_a_domain_that_lints_tests_and_decides(tmp_path: Path) -> None:
    files = files_on_the_page()
    assert len(files) == 7 and "rules/fitness/session.cases.yaml" in files
    root = tmp_path / "root"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    common = ("--root", str(root), "--no-examples", "--db", str(tmp_path / "m.db"))
    assert cli(*common, "rules", "lint") == (0, {"ok": True, "findings": []})
    code, tested = cli(*common, "rules", "test", "--coverage")
    assert code == 0 and tested["passed"] and tested["cases"] == 4, tested
    assert tested["uncovered_rules"] == [] and tested["uncovered_conditions"] == []
    _, listed = cli(*common, "domains")
    [fitness] = listed["domains"]
    assert (fitness["domain"], fitness["problems"]) == ("fitness", [])

    config = EngineConfig(roots=(root,), examples=False)
    with Engine.open(tmp_path / "lib.db", config=config, clock=FrozenClock(T0)) as engine:
        engine.ingest({"user_id": "sam", "domain": "fitness", "key": "training.goal",
                       "value": "strength", "source": "dialogue", "confidence": 0.9})  # fmt: skip
        assert engine.decide("sam", "fitness", {"minutes": 45}).result.action == "suggest_session"
        consent = {"consent_granted": True, "consent_version": "v1"}
        engine.ingest(
            {
                "user_id": "sam",
                "domain": "fitness",
                "key": "injury.current",
                "value": "injury:knee",
                "source": "dialogue",
                "provenance": consent,
            }
        )
        made = engine.decide("sam", "fitness", {"minutes": 45})
        assert made.result.action == "refer_to_physio"
        assert "Injured (injury:knee)" in engine.explain(made.decision_id, "text")
        with pytest.raises(ValidationFailed) as refused:  # the shape knows the injuries
            engine.ingest(
                {
                    "user_id": "sam",
                    "domain": "fitness",
                    "key": "injury.current",
                    "value": "injury:elbow",
                    "source": "dialogue",
                    "provenance": consent,
                }
            )
        assert refused.value.report.codes == ["shacl.violation"]


def test_the_page_lists_exactly_what_a_fact_condition_accepts() -> None:
    """The page listed ``between|outside|exists`` for ``fact:``, which the rule schema refuses."""
    from memkg.rules.kinds import definitions
    from memkg.rules.loader import load_bundle

    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    [listed] = re.findall(r"`fact: \{key, ([^}]*)\}`", text)
    words = [w.strip() for w in listed.split(",")]
    ops = words[0].split("|")
    fields = [w.split(":")[0] for w in words[1:]]
    accepted = set(definitions()["kind.fact"]["properties"])
    assert {"key", *ops, *fields} == accepted
    operand = {"in": "[1]", "not_in": "[1]", "match": "{a: 1}"}
    for op in ops:
        table = ("hit_policy: first\nallow_no_match: true\nrules:\n  - id: t.r\n    when:\n"
                 f"      - fact: {{key: child.age, {op}: {operand.get(op, '1')}}}\n"
                 "    then: {action: go}\n    reason_code: R\n    explain: x\n")  # fmt: skip
        _, findings = load_bundle({"t/domain.yaml": "actions: {go: {description: go}}\n",
                                   "t/x.yaml": table})  # fmt: skip
        assert findings == [], (op, findings)
    [context_ops] = re.findall(r"`context: \{field: \{op: value\}\}`, `op` one of `([^`]*)`", text)
    body = definitions()["kind.context"]["additionalProperties"]["oneOf"][1]
    assert set(context_ops.split("|")) == set(body["properties"])
