"""``--db postgresql://...``: the command line (and ``serve``'s key store) on PostgreSQL."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memkg.cli import main

pytestmark = pytest.mark.postgres


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def _avoids_mu(folder: Path) -> str:
    """A JSONL file of one observation: li avoids airline:MU."""
    path = folder / "obs.jsonl"
    path.write_text(json.dumps({"user_id": "li", "domain": "travel", "key": "airline.avoided",
                                "value": ["airline:MU"], "source": "dialogue"}) + "\n")  # fmt: skip
    return str(path)


def test_ingest_facts_decide_and_keys_on_postgresql(
    postgres_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    db = ("--db", postgres_dsn, "--pg-schema", pg_schema)
    assert cli(*db, "ingest", _avoids_mu(tmp_path))[0] == 0
    _, [facts] = cli(*db, "facts", "li")
    assert [f["key"] for f in facts["facts"]] == ["airline.avoided"]
    _, [made] = cli(*db, "decide", "li", "--domain", "travel", "--context",
                    '{"airline": "airline:MU"}')  # fmt: skip
    assert made["action"] == "suggest_other_airline"
    _, [replayed] = cli(*db, "replay", made["decision_id"])
    assert replayed["reproduced"] is True
    code, [key] = cli(*db, "access", "key", "create", "agent", "--scope", "read",
                      "--domain", "travel")  # fmt: skip
    assert code == 0 and key["token"].startswith("mk_")
    _, [listed] = cli(*db, "access", "key", "list")
    assert [k["name"] for k in listed["keys"]] == ["agent"]


def test_a_read_of_a_schema_that_holds_no_store_says_so_and_creates_none(
    postgres_dsn: str, pg_schema: str
) -> None:
    """A mistyped --pg-schema read as an empty store would look like a user memkg knows
    nothing of, and a rules diff over it would pass its gate."""
    import psycopg

    typo = pg_schema + "_typo"
    for argv in (("facts", "li"), ("access", "key", "list"), ("rules", "diff", ".", ".")):
        code, [error] = cli("--db", postgres_dsn, "--pg-schema", typo, *argv)
        assert (code, error["error"]) == (1, "store.not_found"), argv
        assert typo in error["message"]
    with psycopg.connect(postgres_dsn) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                             (typo,)).fetchone()  # fmt: skip
    assert found is None
    # the server is named without a password, however the URL gives it
    for url in (postgres_dsn + ("&" if "?" in postgres_dsn else "?") + "password=Sup3rSecret",
                postgres_dsn.replace("://", "://:Sup3rSecret@", 1)
                if "@" not in postgres_dsn else postgres_dsn):  # fmt: skip
        _, [error] = cli("--db", url, "--pg-schema", typo, "facts", "li")
        assert "Sup3rSecret" not in error["message"]


def test_a_schema_name_no_store_is_made_under_is_told_so_by_reads_and_writes(
    postgres_dsn: str,
) -> None:
    """A read of ``Memkg-Prod`` said no store was there, a write that the name is not one
    memkg makes a store under: both say the name is the problem."""
    for argv in (("facts", "li"), ("decide", "li", "--domain", "travel")):
        code, [error] = cli("--db", postgres_dsn, "--pg-schema", "Memkg-Prod", *argv)
        assert (code, error["error"]) == (1, "config.invalid"), argv
        assert "must match" in error["message"]


def test_keys_are_listed_and_revoked_on_a_schema_that_holds_only_keys(
    postgres_dsn: str, pg_schema: str
) -> None:
    """README's order: keys are made before the first `serve` makes the event store."""
    db = ("--db", postgres_dsn, "--pg-schema", pg_schema)
    code, [key] = cli(*db, "access", "key", "create", "agent", "--scope", "read",
                      "--domain", "travel")  # fmt: skip
    assert code == 0
    code, [listed] = cli(*db, "access", "key", "list")
    assert code == 0 and [k["name"] for k in listed["keys"]] == ["agent"]
    code, [revoked] = cli(*db, "access", "key", "revoke", key["key"]["key_id"])
    assert code == 0 and revoked["revoked_at"] is not None


def test_keys_are_listed_on_a_schema_that_holds_memory_but_no_keys_yet(
    postgres_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    db = ("--db", postgres_dsn, "--pg-schema", pg_schema)
    assert cli(*db, "ingest", _avoids_mu(tmp_path))[0] == 0
    assert cli(*db, "access", "key", "list") == (0, [{"keys": []}])
