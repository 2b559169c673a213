"""Numeric options out of range are usage errors (exit 2) before anything opens, as over HTTP;
and a JSONL file saved with a byte-order mark reads from its first line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memkg import Engine
from memkg.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["facts", "u1", "--as-of=-1"],
        ["graph", "u1", "--as-of=-1"],
        ["decisions", "u1", "--limit=0"],
        ["decisions", "u1", "--limit=-1"],
        ["decisions", "u1", "--limit=1001"],
        ["recall", "u1", "airline", "-k=-1"],
        ["paths", "u1", "city:shanghai", "--max-depth=0"],
        ["paths", "u1", "city:shanghai", "--max-depth=1000000"],
        ["profile", "u1", "--domain", "travel", "--budget=-5"],
        ["facts", "u1", "--as-of=x"],
        ["rules", "diff", "a", "b", "--replay=-1"],
        ["rules", "diff", "a", "b", "--replay=x"],
        ["claims", "u1", "seat.preference", "--context", "trip_type"],
        ["claims", "u1", "seat.preference", "--context", "=business"],
    ],
)
def test_an_option_out_of_range_is_a_usage_error(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    with pytest.raises(SystemExit) as stopped:
        main(["--db", str(db), *argv], io.StringIO())
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert "out of range" in said or "x" in argv[-1] or "is not FIELD=VALUE" in said
    assert not db.exists()  # refused before any store opened


def test_the_bounds_themselves_are_accepted(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    Engine.open(db).close()  # a store to read: a read never starts one
    for argv in (["facts", "u1", "--as-of=0"], ["decisions", "u1", "--limit=1000"],
                 ["recall", "u1", "airline", "-k=0"],
                 ["paths", "u1", "city:shanghai", "--max-depth=6"]):  # fmt: skip
        out = io.StringIO()
        assert main(["--db", db, *argv], out) == 0, out.getvalue()


def test_a_byte_order_mark_does_not_refuse_the_first_line(tmp_path: Path) -> None:
    line = json.dumps({"user_id": "u1", "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "dialogue"})  # fmt: skip
    path = tmp_path / "obs.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line.encode() + b"\r\n")
    out = io.StringIO()
    assert main(["--db", str(tmp_path / "m.db"), "ingest", str(path)], out) == 0
    assert json.loads(out.getvalue())["result"] == "accepted"


def test_a_context_field_given_twice_is_refused(tmp_path: Path) -> None:
    """Which one was meant? As over HTTP: refused, not the last one taken silently."""
    db = str(tmp_path / "m.db")
    Engine.open(db).close()
    out = io.StringIO()
    code = main(["--db", db, "claims", "u1", "seat.preference", "--context",
                 "trip_type=business", "--context", "trip_type=leisure"], out)  # fmt: skip
    said = json.loads(out.getvalue().splitlines()[-1])
    assert code == 2 and said["error"] == "usage" and "'trip_type' twice" in said["message"]
