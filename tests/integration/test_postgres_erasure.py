"""Erasure on PostgreSQL: one transaction across events, decisions, keys and audit; after the
documented purge (``erase_vacuum="full"``) no page of the schema holds the subject's bytes;
an erasure killed midway leaves everything in place (SQLite too)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig
from memkg.access import Keyring
from memkg.access.model import AccessRecord
from memkg.access.postgres import PostgresAccessStore
from memkg.access.sqlite import SqliteAccessStore
from support.observations import CONSENTED, obs

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def _fill(engine: Engine, user: str, marker: str) -> None:
    engine.ingest(obs(user_id=user, value="airline:MU", idempotency_key=f"{marker}-k1"))
    engine.ingest(obs(user_id=user, domain="health", key="child.age", value=4,
                      source="profile", **CONSENTED))  # fmt: skip
    engine.save_memory_note(user, "travel", f"Prefers quiet hotels near {marker} station",
                            scope="global")  # fmt: skip
    engine.decide(user, "health", {"symptom": "fever"})
    # what the agent was given: traced beside the events, erased in the same transaction
    engine.render_profile(user, "travel")
    engine.recall(user, f"quiet hotels near {marker}", domain="travel")
    engine.ingest(obs(user_id="bystander", value="airline:CA"))


def _audit(keys: Any, user: str) -> None:
    ring = Keyring(keys, Engine().clock)
    ring.create("agent", ["read"], ["travel"], user_id=user)
    ring.record([AccessRecord(record_id="acc_1", at=ring.clock.now(), key_id="k", action="read",
                              status=200, subject=user, domain="travel")])  # fmt: skip


@pytest.fixture
def pageinspect(postgres_dsn: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        # another session may create it at the same moment
        with contextlib.suppress(psycopg.errors.UniqueViolation):
            db.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        yield db


def _residue(db: Any, schema: str, needles: list[bytes]) -> dict[str, int]:
    """Occurrences of ``needles`` in every page of every relation of ``schema``: tables,
    their TOAST relations and every index, read raw with pageinspect."""
    rows = db.execute(
        "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'i')"
        " UNION SELECT t.oid::regclass::text FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class t ON t.oid = c.reltoastrelid"
        " WHERE n.nspname = %s"
        " UNION SELECT i.indexrelid::regclass::text FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_index i"
        " ON i.indrelid = c.reltoastrelid WHERE n.nspname = %s",
        (schema, schema, schema),
    ).fetchall()
    found: dict[str, int] = {}
    for (relation,) in rows:
        blocks = db.execute(
            "SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int",
            (relation,),
        ).fetchone()[0]
        for block in range(blocks):
            page = bytes(db.execute("SELECT get_raw_page(%s, %s)", (relation, block)).fetchone()[0])
            hits = sum(page.count(n) for n in needles)
            if hits:
                found[relation] = found.get(relation, 0) + hits
    return found


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["off", "vacuum", "full"])
def test_after_the_purge_no_page_holds_the_subject(
    postgres_dsn: str, pg_schema: str, pageinspect: Any, mode: str
) -> None:
    marker = f"zqx{secrets.token_hex(5)}"
    user = f"subject-{marker}"
    config = EngineConfig(pg_schema=pg_schema, erase_vacuum=mode)  # type: ignore[arg-type]
    keys = PostgresAccessStore(postgres_dsn, schema=pg_schema)
    with Engine.connect(postgres_dsn, config=config) as engine:
        _fill(engine, user, marker)
        _audit(keys, user)
        needles = [marker.encode()]
        assert _residue(pageinspect, pg_schema, needles)  # the scan finds what is there

        receipt = engine.erase(user, also=(keys,))

        assert receipt.removed["decisions"] == 1 and receipt.removed["access_audit"] == 2
        assert receipt.removed["events"] >= 3 and receipt.removed["salts"] == 1
        assert receipt.removed["traces"] == 3  # decide, render_profile, recall
        left = _residue(pageinspect, pg_schema, needles)
        if mode == "full":
            assert left == {}
        else:  # deleted rows stay in the pages until VACUUM FULL rewrites them
            assert any(".events" in relation for relation in left)
        assert [f.user_id for f in engine.facts("bystander")] == ["bystander"]
        assert engine.store.was_erased(user)  # type: ignore[attr-defined]
    keys.close()


@pytest.mark.postgres
def test_after_an_audit_id_purge_no_page_holds_its_facts(
    postgres_dsn: str, pg_schema: str, pageinspect: Any
) -> None:
    """The purge's VACUUM covers every table it touched: events, idempotency keys, the
    decisions citing the facts and the users' vectors."""
    marker = f"zqa{secrets.token_hex(5)}"
    audit = {"provenance": {**CONSENTED["provenance"], "audit_log_id": f"aud-{marker}",
                            "source_ref": f"ref-{marker}"}}  # fmt: skip
    config = EngineConfig(pg_schema=pg_schema, erase_vacuum="full")
    with Engine.connect(postgres_dsn, config=config) as engine:
        for user in ("u1", "u2"):
            engine.ingest(obs(user_id=user, domain="health", key="medication.current",
                              value=[f"{marker} 5 mg"], idempotency_key=f"{marker}-{user}",
                              **audit))  # fmt: skip
            engine.ingest(obs(user_id=user, value="airline:MU"))
            engine.decide(user, "health", {"symptom": "fever"})
            engine.recalls.vector_store.put(user, "m", {marker: [1.0, 0.0]}, 0)
        assert _residue(pageinspect, pg_schema, [marker.encode()])

        receipts = engine.erase_audit_id(f"aud-{marker}")

        assert [r.removed["facts"] for r in receipts] == [1, 1]
        assert _residue(pageinspect, pg_schema, [marker.encode()]) == {}
        assert [f.value for f in engine.facts("u1")] == ["airline:MU"]


CHILD = """
import os, sys, time
from memkg import Engine, EngineConfig
from memkg.access.postgres import PostgresAccessStore
from memkg.access.sqlite import SqliteAccessStore

db, schema, user = sys.argv[1:]

class Stall:
    '''The last companion: reports that the others did their part, then waits to be killed.'''
    tables = ("nothing",)
    def __init__(self, database):
        self.database = database
    def erase_rows(self, conn, user_id):
        print("midway", flush=True)
        time.sleep(60)
        return 0

with Engine.open(db, config=EngineConfig(pg_schema=schema)) as engine:
    pg = db.startswith("postgresql://")
    keys = PostgresAccessStore(db, schema=schema) if pg else SqliteAccessStore(db)
    engine.erase(user, also=(keys, Stall(engine.store.database)))
"""


def _state(db: str, schema: str, user: str) -> tuple[Any, ...]:
    with Engine.open(db, config=EngineConfig(pg_schema=schema)) as engine:
        keys: Any = (PostgresAccessStore(db, schema=schema) if db.startswith("postgresql://")
                     else SqliteAccessStore(db))  # fmt: skip
        audit = [r.subject for r in keys.records()]
        keys.close()
        erased = engine.store.was_erased(user)  # type: ignore[attr-defined]
        return (len(engine.read_events(user)), len(engine.decisions(user)), audit,
                engine.store.subject_salt(user), erased)  # fmt: skip


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_an_erasure_killed_midway_leaves_nothing_partial(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "postgres":
        db, schema = request.getfixturevalue("postgres_dsn"), request.getfixturevalue("pg_schema")
    else:
        db, schema = str(tmp_path / "memkg.db"), "memkg"
    user = "killed-midway"
    with Engine.open(db, config=EngineConfig(pg_schema=schema)) as engine:
        _fill(engine, user, "kill")
        keys: Any = (PostgresAccessStore(db, schema=schema) if backend == "postgres"
                     else SqliteAccessStore(db))  # fmt: skip
        _audit(keys, user)
        keys.close()
    before = _state(db, schema, user)
    assert before[0] >= 3 and before[1] == 1 and user in before[2] and not before[4]

    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, db, schema, user],
        env={**os.environ, "PYTHONPATH": str(ENGINE)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "midway"  # decisions deleted, audit rewritten
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    child.stdout.close()

    assert _state(db, schema, user) == before
    with Engine.open(db, config=EngineConfig(pg_schema=schema)) as engine:
        keys = (PostgresAccessStore(db, schema=schema) if backend == "postgres"
                else SqliteAccessStore(db))  # fmt: skip
        receipt = engine.erase(user, also=(keys,))  # a retry finishes the job
        keys.close()
        assert receipt.removed["decisions"] == 1
        assert engine.read_events(user) == [] and engine.decisions(user) == []
