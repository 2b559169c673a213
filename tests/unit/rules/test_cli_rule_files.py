"""``memkg rules lint | test PATH``: a file is linted alone; anything else is refused, in JSON."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memkg.cli import main
from memkg.roots import builtin

DOMAIN = "actions: {go: {description: go}}\n"
TABLE = (
    "hit_policy: first\nallow_no_match: true\nrules:\n  - id: health.x\n    when: []\n"
    "    then: {action: go}\n    reason_code: X\n    explain: x\n"
)


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(["--db", str(tmp_path / "m.db"), *argv], out=out)
    assert "Traceback" not in capsys.readouterr().err
    return code, json.loads(out.getvalue())


def rules_folder(tmp_path: Path, **files: str | bytes) -> Path:
    folder = tmp_path / "rules" / "health"
    folder.mkdir(parents=True)
    (folder / "domain.yaml").write_text(DOMAIN)
    for name, text in files.items():
        target = folder / name.replace("__", ".")
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)
    return folder


def test_an_alias_bomb_is_a_finding_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = rules_folder(tmp_path, t__yaml="a: &a [*a]\n")
    for path in (folder.parent, folder / "t.yaml"):
        code, out = run(tmp_path, capsys, "rules", "lint", str(path))
        assert code == 1 and out["ok"] is False
        [found] = out["findings"]
        assert (found["code"], found["file"], found["line"]) == (
            "rules.yaml_alias",
            "rules/health/t.yaml",
            1,
        )
        assert "anchors and aliases" in found["message"]


def test_deep_nesting_is_a_finding_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = rules_folder(tmp_path, t__yaml="[" * 5000 + "]" * 5000)
    code, out = run(tmp_path, capsys, "rules", "lint", str(folder.parent))
    assert code == 1 and "levels deep" in out["findings"][0]["message"]


def test_a_rule_file_not_in_utf8_is_a_json_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = rules_folder(tmp_path, t__yaml=b"a: \xff\xfe\n")
    for path in (folder.parent, folder / "t.yaml"):
        code, out = run(tmp_path, capsys, "rules", "lint", str(path))
        assert code == 1 and out["error"] == "rules.encoding"
        assert (out["file"], out["line"]) == ("rules/health/t.yaml", 1)


def test_a_broken_file_is_reported_wherever_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = rules_folder(tmp_path, broken__yaml="rules: [ {bad\n")
    code, out = run(tmp_path, capsys, "rules", "lint", str(folder / "broken.yaml"))
    assert code == 1 and [f["code"] for f in out["findings"]] == ["rules.yaml"]


def test_a_file_is_linted_alone_with_its_domain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = rules_folder(tmp_path, t__yaml=TABLE, sibling__yaml=b"\xff broken")
    code, out = run(tmp_path, capsys, "rules", "lint", str(folder / "t.yaml"))
    assert (code, out) == (0, {"ok": True, "findings": []})
    code, out = run(tmp_path, capsys, "rules", "lint", str(folder / "domain.yaml"))
    assert (code, out) == (0, {"ok": True, "findings": []})


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("deep/a/b/broken.yml", "not a rule file"),
        ("deep/a/b/broken2.yaml", "b/ is not a declared rules domain"),
        ("passwd", "not a rule file"),
        ("rules/health/t.cases.yaml", "run `memkg rules test`"),
        ("rules/health/questions.yaml", "arbitration policy"),
    ],
)
def test_files_outside_the_layout_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, says: str
) -> None:
    rules_folder(tmp_path, t__yaml=TABLE)
    target = tmp_path / where
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("rules: [ {bad\n")
    code, out = run(tmp_path, capsys, "rules", "lint", str(target))
    assert code == 1 and out["error"] == "rules.not_rule_file" and says in out["message"]
    assert out["message"].startswith(str(target))


@pytest.mark.parametrize("command", ["lint", "test"])
def test_a_folder_without_rule_files_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "empty" / "health").mkdir(parents=True)
    (tmp_path / "empty" / "health" / "note.yml").write_text("x: 1\n")
    code, out = run(tmp_path, capsys, "rules", command, str(tmp_path / "empty"))
    assert code == 1 and out["error"] == "rules.missing"
    assert out["message"].startswith(f"no rule files found in {tmp_path / 'empty'}")


@pytest.mark.parametrize("given", ["root", "domain"])
def test_a_root_or_a_domain_folder_is_refused_naming_the_rules_folder_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    """Both are easy slips for `rules/`; the message says which folder is meant, as
    ``Engine.reload_rules`` says it."""
    folder = rules_folder(tmp_path, t__yaml=TABLE)
    path = tmp_path if given == "root" else folder
    code, out = run(tmp_path, capsys, "rules", "lint", str(path))
    assert code == 1 and out["error"] == "rules.missing"
    give = {"root": "give its rules folder", "domain": "give the rules folder that holds it"}
    assert out["message"].endswith(f"{give[given]}, {tmp_path / 'rules'}, or one rule file")


def shipped(tmp_path: Path) -> Path:
    shutil.copytree(builtin("examples") / "rules", tmp_path / "rules")
    return tmp_path / "rules" / "health"


def test_rules_test_on_a_file_runs_only_its_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    health = shipped(tmp_path)
    (health.parent / "travel" / "booking.cases.yaml").write_text("broken: [\n")
    _, whole = run(tmp_path, capsys, "rules", "test", str(health.parent))
    assert not whole["passed"]
    for name in ("triage.yaml", "triage.cases.yaml"):
        code, out = run(tmp_path, capsys, "rules", "test", str(health / name), "--coverage")
        assert code == 0 and out["passed"] and out["findings"] == []
        assert 0 < out["cases"] < whole["cases"]
        assert out["uncovered_rules"] == []


def test_rules_test_refuses_a_file_without_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = rules_folder(tmp_path, t__yaml=TABLE)
    code, out = run(tmp_path, capsys, "rules", "test", str(folder / "t.yaml"))
    assert code == 1 and out["error"] == "rules.no_cases" and "t.cases.yaml" in out["message"]
    code, out = run(tmp_path, capsys, "rules", "test", str(folder / "domain.yaml"))
    assert code == 1 and out["error"] == "rules.no_cases"
    (folder / "gone.cases.yaml").write_text("cases: []\n")
    code, out = run(tmp_path, capsys, "rules", "test", str(folder / "gone.cases.yaml"))
    assert code == 1 and "no rule table gone.yaml" in out["message"]
    code, out = run(tmp_path, capsys, "rules", "test", str(tmp_path / "passwd"))
    assert code == 1 and out["error"] == "rules.missing"


def test_rules_of_a_root_not_in_force_are_warned_about_with_the_command_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``memkg init mine`` then ``rules lint mine/rules`` reads mine's rules against the
    roots in force, which do not declare its keys: say which --root would."""
    monkeypatch.chdir(tmp_path)
    assert main(["init", "mine", "--domain", "pets"], out=io.StringIO()) == 0
    code, report = run(tmp_path, capsys, "rules", "lint", "mine/rules")
    [hint] = [f for f in report["findings"] if f["code"] == "rules.root_not_in_force"]
    assert code == 1 and hint["severity"] == "warning"
    assert "memkg --root mine rules lint" in hint["message"]
    code, report = run(tmp_path, capsys, "--root", "mine", "rules", "lint", "mine/rules")
    assert (code, report) == (0, {"ok": True, "findings": []})


HEX = "0x" + "f" * 4000
"""An integer PyYAML reads with no digit limit: a traceback in lint, test and decide once."""
FAVORITE = '      - fact: {key: widget.favorite, in: ["widget_item:basic", "widget_item:deluxe"]}'
CASE_FACT = (
    '      - {key: widget.favorite, value: "widget_item:basic", source: dialogue, confidence: 0.9}'
)


def widget_root(tmp_path: Path, name: str, old: str, new: str) -> Path:
    root = tmp_path / "root"
    assert main(["init", str(root), "--domain", "widget"], out=io.StringIO()) == 0
    path = root / "rules" / "widget" / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return root


@pytest.mark.parametrize("number", [HEX, "0o" + "7" * 5000, "0x1_0000_0000_0000_0000"])
def test_an_integer_past_64_bits_in_a_rule_is_a_finding_in_lint_and_decide(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], number: str
) -> None:
    root = widget_root(tmp_path, "suggestion.yaml", FAVORITE,
                       f"      - fact: {{key: widget.budget, lt: {number}}}")  # fmt: skip
    common = ("--root", str(root), "--no-examples")
    code, out = run(tmp_path, capsys, *common, "rules", "lint", str(root / "rules"))
    [found] = out["findings"]
    assert code == 1 and (found["code"], found["line"]) == ("rules.yaml_number", 13)
    assert found["file"] == "rules/widget/suggestion.yaml" and "2**63" in found["message"]
    code, out = run(tmp_path, capsys, *common, "decide", "u1", "--domain", "widget")
    assert code == 1 and "rules.yaml_number" in json.dumps(out), out


def test_an_integer_past_64_bits_in_a_case_is_a_finding_in_rules_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = widget_root(tmp_path, "suggestion.cases.yaml", CASE_FACT,
                       f"      - {{key: widget.budget, value: {HEX}}}")  # fmt: skip
    code, out = run(tmp_path, capsys, "--root", str(root), "--no-examples", "rules", "test",
                    str(root / "rules"))  # fmt: skip
    [found] = out["findings"]
    assert code == 1 and found["line"] == 5 and "2**63" in found["message"]
