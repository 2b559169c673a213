"""What the CLI says of input it refuses: exit 3 for refused input whatever stage refuses it,
exit 2 for an option out of range, and no internal placeholder in a message."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memkg.cli import main
from memkg.roots import builtin
from support.observations import obs


def run(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("context", "code"),
    [
        ('{"airline": "a\\u0000b"}', "text.nul"),
        ('{"airline": "a\\ud800b"}', "text.invalid_unicode"),
    ],
)
def test_text_no_store_can_keep_in_a_decision_context_is_refused_input(
    tmp_path: Path, context: str, code: str
) -> None:
    exit_code, [error] = run("--db", str(tmp_path / "m.db"), "decide", "li", "--domain",
                             "travel", "--context", context)  # fmt: skip
    assert (exit_code, error["error"]) == (3, code)


def test_a_non_finite_context_value_says_so_without_a_placeholder(tmp_path: Path) -> None:
    exit_code, [answer] = run("--db", str(tmp_path / "m.db"), "decide", "li", "--domain",
                              "travel", "--context", '{"airline": 1e999}')  # fmt: skip
    text = json.dumps(answer)
    assert exit_code == 3 and answer["status"] == "invalid_input"
    assert "NaN or Infinity" in text and "non_finite" not in text, text


@pytest.mark.parametrize("confidence", ["NaN", "Infinity", "1e400"])
def test_a_non_finite_confidence_is_value_non_finite(tmp_path: Path, confidence: str) -> None:
    line = json.dumps(obs()).replace('"confidence": 0.9', f'"confidence": {confidence}')
    source = tmp_path / "in.jsonl"
    source.write_text(line + "\n", encoding="utf-8")
    exit_code, [result] = run("--db", str(tmp_path / "m.db"), "ingest", str(source))
    [problem] = result["problems"]
    assert exit_code == 3 and problem["code"] == "value.non_finite", result
    assert problem["path"] == "$.confidence" and "not a finite number" in problem["message"]


@pytest.mark.parametrize("decisions", ["-1", "201", "99999999999999999999999"])
def test_a_dry_run_s_decisions_out_of_range_is_bad_usage(
    tmp_path: Path, decisions: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        run("--db", str(tmp_path / "m.db"), "schema", "migrate", "health/diet_organ_meat",
            "--dry-run", "--decisions", decisions)  # fmt: skip
    assert stopped.value.code == 2 and "--decisions" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [["facts", "li"], ["history", "li", "airline.preferred"], ["decisions", "li"],
     ["graph", "li"], ["profile", "li", "--domain", "travel"], ["rebuild"],
     ["memory", "status", "li"], ["access", "key", "list"], ["access", "audit"],
     ["access", "grant", "list"]],
    ids=lambda argv: argv[0],
)  # fmt: skip
def test_a_read_of_a_store_that_does_not_exist_says_so_and_starts_none(
    tmp_path: Path, argv: list[str]
) -> None:
    """A mistyped --db read as an empty store would look like a user memkg knows nothing of."""
    db = tmp_path / "typo.db"
    exit_code, [error] = run("--db", str(db), *argv)
    assert (exit_code, error["error"]) == (1, "store.not_found") and str(db) in error["message"]
    assert list(tmp_path.iterdir()) == []


def test_rule_files_are_checked_without_a_store(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run("--db", str(db), "rules", "lint") == (0, [{"ok": True, "findings": []}])
    exit_code, [report] = run("--db", str(db), "rules", "test")
    assert exit_code == 0 and report["passed"] is True
    assert list(tmp_path.iterdir()) == []


def test_rules_diff_of_a_missing_store_is_refused_and_of_an_empty_memory_runs(
    tmp_path: Path,
) -> None:
    """A mistyped --db would replay nothing and pass the gate; :memory: says so on purpose."""
    rules = str(builtin("examples") / "rules")
    exit_code, [error] = run("--db", str(tmp_path / "m.dbb"), "rules", "diff", rules, rules)
    assert (exit_code, error["error"]) == (1, "store.not_found")
    exit_code, [report] = run("--db", ":memory:", "rules", "diff", rules, rules)
    assert exit_code == 0 and report["verdict"] == "PASS", report
    assert list(tmp_path.iterdir()) == []
