"""The fact-layer CLI: JSONL ingest with per-line results and exit codes, reads, erase."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from memkg.cli import main
from support.observations import obs


def run(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def write_jsonl(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_ingest_reports_each_line_and_exits_3_on_any_refusal(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    deep = "[" * 5000 + "]" * 5000
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [
            json.dumps(obs()),
            json.dumps(obs(key="seat.preference", value="sideways")),
            "this is not json",
            '{"user_id": "u1", "domain": "travel", "key": "airline.preferred", "value": '
            + deep
            + "}",
            json.dumps(obs(value="x" * 300_000)),
            json.dumps(obs(key="seat.preference", value="aisle")),
        ],
    )
    code, lines = run("--db", db, "ingest", source)
    assert code == 3
    assert [line["result"] for line in lines] == [
        "accepted",
        "rejected",
        "rejected",
        "rejected",
        "rejected",
        "accepted",
    ]
    assert [line["line"] for line in lines] == [1, 2, 3, 4, 5, 6]
    assert lines[0]["fact_id"].startswith("fact_") and lines[0]["event_id"].startswith("evt_")
    assert lines[1]["problems"][0]["code"] == "schema.enum"
    assert lines[2]["problems"][0]["code"] == "input.json"
    assert lines[3]["problems"][0]["code"] == "limit.depth"
    assert lines[4]["problems"][0]["code"] == "limit.size"

    code, [facts] = run("--db", db, "facts", "u1")
    assert code == 0
    assert sorted(f["key"] for f in facts["facts"]) == ["airline.preferred", "seat.preference"]


def test_all_accepted_exits_0_and_reads_work(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    source = write_jsonl(
        tmp_path / "in.jsonl",
        [
            json.dumps(obs(value="airline:MU")),
            json.dumps(obs(value="airline:CA")),
            json.dumps(obs(key="location.city", value="city:beijing")),
        ],
    )
    code, lines = run("--db", db, "ingest", source)
    assert code == 0
    first_seq = lines[0]["seq"]

    _, [history] = run("--db", db, "history", "u1", "airline.preferred")
    assert [(h["value"], h["status"]) for h in history["history"]] == [
        ("airline:MU", "superseded"),
        ("airline:CA", "active"),
    ]
    _, [as_of] = run("--db", db, "facts", "u1", "--as-of", str(first_seq))
    assert [f["value"] for f in as_of["facts"]] == ["airline:MU"]

    city = lines[2]["fact_id"]
    assert lines[2]["status"] == "pending_confirmation"
    code, [confirmed] = run("--db", db, "confirm", "u1", city)
    assert code == 0 and confirmed["status"] == "confirmed"
    code, [retracted] = run("--db", db, "retract", "u1", city, "--reason", "wrong city")
    assert code == 0 and retracted["status"] == "retracted"
    code, [again] = run("--db", db, "retract", "u1", city, "--reason", "again")
    assert code == 1 and again["error"] == "fact.not_live"

    code, [rebuilt] = run("--db", db, "rebuild")
    assert code == 0 and rebuilt["events"] == 6 and rebuilt["users"] == 1

    code, [receipt] = run("--db", db, "erase", "u1")
    assert code == 0 and receipt["removed"]["events"] == 6
    _, [facts] = run("--db", db, "facts", "u1")
    assert facts["facts"] == []


def test_unknown_fact_is_a_clean_error(tmp_path: Path) -> None:
    code, [error] = run("--db", str(tmp_path / "m.db"), "confirm", "u1", "fact_nope")
    assert code == 1
    assert error == {"error": "fact.not_found", "message": "no fact fact_nope for user u1"}


def test_a_damaged_database_is_a_clean_error(tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    db.write_bytes(b"this is not a database" * 100)
    code, [error] = run("--db", str(db), "facts", "u1")
    assert code == 1 and error["error"] == "store.unreadable"
    assert str(db) in error["message"]


def test_a_missing_input_file_and_bad_usage_are_clean_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    code, [error] = run("--db", db, "ingest", str(tmp_path / "missing.jsonl"))
    assert code == 1 and error["error"] == "input.unreadable"
    code, [error] = run("--db", db, "erase")
    assert code == 2 and error["error"] == "usage"


def test_erase_pseudonymises_the_keys_and_audit_beside_the_memory(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    code, [created] = run("--db", db, "access", "key", "create", "agent", "--scope", "read",
                          "--domain", "travel", "--user", "u9")  # fmt: skip
    assert code == 0 and created["key"]["user_id"] == "u9"
    lines = write_jsonl(tmp_path / "in.jsonl", [json.dumps(obs(user_id="u9"))])
    assert run("--db", db, "ingest", lines)[0] == 0
    code, [receipt] = run("--db", db, "erase", "u9")
    assert code == 0 and receipt["removed"]["access_audit"] == 1  # the key bound to u9
    _, [keys] = run("--db", db, "access", "key", "list")
    assert [k["user_id"][:5] for k in keys["keys"]] == ["hmac:"]


def test_the_line_bound_counts_bytes_not_characters(tmp_path: Path) -> None:
    """100,000 CJK characters are 300,000 bytes of UTF-8: past the 256 KiB bound."""
    db = str(tmp_path / "m.db")
    wide = json.dumps(obs(value="中" * 100_000), ensure_ascii=False)
    assert len(wide) < 256 * 1024 < len(wide.encode("utf-8"))
    source = write_jsonl(tmp_path / "in.jsonl", [wide])
    code, lines = run("--db", db, "ingest", source)
    assert code == 3
    problem = lines[0]["problems"][0]
    assert problem["code"] == "limit.size"
    assert f"{len(wide.encode('utf-8')) + 1:,} bytes" in problem["message"]  # with its newline
