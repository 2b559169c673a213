"""Command-line habits: --version, logs on standard error without user data, quiet progress,
and the library's in-memory door."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memkg import Engine
from memkg.cli import main
from memkg.cli.progress import Progress


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("memkg 0.")


def test_json_logs_carry_counts_never_user_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    obs = tmp_path / "obs.jsonl"
    obs.write_text(json.dumps({"user_id": "secret-user-42", "domain": "travel",
                               "key": "airline.avoided", "value": ["airline:MU"],
                               "source": "dialogue"}) + "\n")  # fmt: skip
    db = str(tmp_path / "m.db")
    log = ("--log-level", "info", "--log-format", "json", "--db", db)
    assert main([*log, "ingest", str(obs)], io.StringIO()) == 0
    assert main([*log, "rebuild"], io.StringIO()) == 0
    assert main([*log, "decide", "secret-user-42", "--domain", "travel"], io.StringIO()) == 0
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    messages = {entry["message"]: entry for entry in lines}
    assert messages["projections rebuilt"]["users"] == 1
    assert messages["rule bundle compiled"]["tables"] >= 1
    assert {entry["level"] for entry in lines} <= {"info", "warning", "error"}
    text = json.dumps(lines)
    assert "secret-user-42" not in text and "airline:MU" not in text


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_and_not_when_quiet() -> None:
    for stream, quiet, drawn in ((io.StringIO(), False, False), (Terminal(), True, False),
                                 (Terminal(), False, True)):  # fmt: skip
        progress = Progress("rebuild: events", stream, quiet=quiet)
        progress(1000)
        progress.close()
        assert (stream.getvalue() != "") is drawn
    assert "rebuild: events: 1000 done" in stream.getvalue()


def test_open_memory_keeps_nothing_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Engine.open(":memory:") as engine:
        engine.ingest({"user_id": "u", "domain": "travel", "key": "airline.preferred",
                       "value": "airline:MU", "source": "dialogue"})  # fmt: skip
        assert [f.value for f in engine.facts("u")] == ["airline:MU"]
    assert list(tmp_path.iterdir()) == []


def test_every_commands_help_lists_the_store_options_it_takes() -> None:
    """``--db`` and ``--pg-schema`` may follow the command; its help says so."""
    from memkg.cli import _subparsers, build_parser

    commands = _subparsers(build_parser())
    assert len(commands) > 30
    for command in commands:
        shown = command.format_help()
        assert "--db" in shown and "--pg-schema" in shown, command.prog
