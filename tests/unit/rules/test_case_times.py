"""A case's times past what a date holds are findings with file and line, not a traceback:
the cases schema bounds ``observed_days_ago`` and ``valid_hours`` (100 years), and a ``now``
so early or late that the case's times leave the years 1 to 9999 is ``rules.case``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memkg.cli import main
from memkg.scaffold import init_root

FACT = "source: dialogue, confidence: 0.9}"


def root_with(tmp_path: Path, extra: str, now: str | None = None) -> Path:
    init_root(tmp_path, "lab")
    cases = tmp_path / "rules/lab/suggestion.cases.yaml"
    text = cases.read_text(encoding="utf-8")
    assert FACT in text
    text = text.replace(FACT, FACT[:-1] + f", {extra}}}", 1)
    if now is not None:
        text = text.replace('now: "2026-05-01T09:00:00Z"', f'now: "{now}"', 1)
    cases.write_text(text, encoding="utf-8")
    return tmp_path


def run(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--root", str(root), "--no-examples", "--db", str(root / "m.db"), *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("extra", ["observed_days_ago: 1000000", "valid_hours: 100000000"])
def test_a_span_past_a_hundred_years_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str
) -> None:
    root = root_with(tmp_path, extra)
    code, out = run(root, capsys, "rules", "test")
    assert code == 1, out
    [finding] = json.loads(out)["findings"]
    assert finding["file"].endswith("suggestion.cases.yaml") and finding["line"] == 5
    assert "maximum of" in finding["message"]


def test_an_early_now_is_a_case_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = root_with(tmp_path, "observed_days_ago: 1000", now="0002-01-01T09:00:00Z")
    code, out = run(root, capsys, "rules", "test")
    assert code != 0 and "Traceback" not in out, out
    error = json.loads(out)
    assert error["error"] == "rules.case" and "suggestion.cases.yaml:2" in error["message"]


def test_a_case_whose_context_is_refused_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: only "action: expected 'suggest_item', got None"
    init_root(tmp_path, "lab")
    cases = tmp_path / "rules/lab/suggestion.cases.yaml"
    text = cases.read_text(encoding="utf-8")
    assert "context: {occasion: everyday}" in text
    cases.write_text(text.replace("context: {occasion: everyday}", "context: {occasionn: 1}"))
    code, out = run(tmp_path, capsys, "rules", "test")
    assert code == 1, out
    [failed] = json.loads(out)["failed"]
    assert any("the request was refused" in f and "occasionn" in f for f in failed["failures"])


@pytest.mark.parametrize("now", ["9999-12-31T20:00:00-05:00", "0001-01-01T01:00:00+05:00"])
def test_a_now_at_the_edge_of_the_calendar_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], now: str
) -> None:
    root = root_with(tmp_path, "status: active", now=now)
    code, out = run(root, capsys, "rules", "test")
    assert code == 1 and "Traceback" not in out, out
    [finding] = json.loads(out)["findings"]
    assert finding["code"] == "cases.now" and finding["line"] == 3
    assert "from 0002 to 9998" in finding["message"]
