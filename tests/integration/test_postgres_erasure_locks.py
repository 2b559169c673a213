"""An erasure of merged ids never deadlocks with another process's work on those ids.

An erasure of a person with several ids runs one transaction that, id after id, locks the
id's stream row, then the log's purge count (``meta``), deletes, and moves to the next id.
It therefore holds the count while it asks for the next id's stream row. Another process
that holds that row and then waits for the count closes a cycle, and PostgreSQL aborts one
side: a trace written for the second id (which locks its stream row, then the count), or a
second erasure of the same person begun from the other id (which starts at that row).

Each test stops the erasure inside its first id's delete (a trigger on ``events`` that waits
for an advisory lock the test holds), starts the other process's request in that window,
then lets the erasure go on. Both must finish.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from memkg import Engine, FrozenClock
from memkg.postgres import lock_key
from support.observations import obs
from support.pg_process import EngineProcess

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
PATIENT = "options=-c%20deadlock_timeout%3D60s"
"""The other process looks for deadlocks late, so the erasure is the side that finds one."""


def _named(dsn: str, name: str, *extra: str) -> str:
    return f"{dsn}?{'&'.join([f'application_name={name}', *extra])}"


def _until(what: Callable[[], bool], db: psycopg.Connection[Any]) -> None:
    for _ in range(1200):  # a bound on polls, not a time limit on the code under test
        if what():
            return
        time.sleep(0.05)
    activity = db.execute(
        "SELECT application_name, state, wait_event_type, wait_event, query"
        " FROM pg_stat_activity WHERE datname = current_database()"
    ).fetchall()
    raise AssertionError(f"never reached; activity: {activity}")


def _waiting(db: psycopg.Connection[Any], name: str, event: str | None = None) -> bool:
    """Whether the backend of ``name`` waits for a lock (``event``: of that kind)."""
    row = db.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
        " AND wait_event_type = 'Lock' AND (%s::text IS NULL OR wait_event = %s)",
        (name, event, event),
    ).fetchone()
    return bool(row and row[0])


class Gate:
    """Stops every delete from the schema's ``events`` until ``open``: a trigger waits for an
    advisory lock this connection holds."""

    def __init__(self, db: psycopg.Connection[Any], schema: str) -> None:
        self.db, self.key = db, lock_key(f"gate:{schema}")
        s = f'"{schema}"'
        db.execute(
            f"CREATE FUNCTION {s}.gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            f" PERFORM pg_advisory_xact_lock_shared({self.key}); RETURN NULL; END $$"
        )
        db.execute(f"CREATE TRIGGER gate BEFORE DELETE ON {s}.events"
                   f" FOR EACH STATEMENT EXECUTE FUNCTION {s}.gate()")  # fmt: skip
        db.execute("SELECT pg_advisory_lock(%s)", (self.key,))

    def open(self) -> None:
        self.db.execute("SELECT pg_advisory_unlock(%s)", (self.key,))


@pytest.fixture
def merged(postgres_dsn: str, pg_schema: str) -> Iterator[tuple[Engine, str]]:
    """An engine (named ``<schema>-eraser`` to the server) holding u1 and u2 merged into one
    person, each with memory of their own."""
    name = f"{pg_schema}-eraser"
    dsn = _named(postgres_dsn, name)
    with Engine.connect(dsn, schema=pg_schema, clock=FrozenClock(NOW)) as engine:
        engine.ingest(obs(user_id="u1", value="airline:CA"))
        engine.ingest(obs(user_id="u2", key="airline.avoided", value=["airline:MU"]))
        proposal = engine.merge_users("u1", "u2", by="ops", reason="one person")
        engine.merge_users("u1", "u2", by="ops", reason="one person", confirm=proposal.merge_id)
        yield engine, name


def _race(
    engine: Engine, eraser: str, other: EngineProcess, other_name: str, request: dict[str, Any],
    db: psycopg.Connection[Any], schema: str,
) -> tuple[Any, Any]:  # fmt: skip
    """Erase u1 (so u1, then u2) in this process, stopped in u1's delete while ``other``
    runs ``request``; both outcomes: the receipt's counts or the error, and the answer."""
    gate = Gate(db, schema)
    outcome: dict[str, Any] = {}

    def erase() -> None:
        try:
            outcome["erase"] = engine.erase("u1").removed
        except Exception as exc:  # reported by the assertion below
            outcome["erase"] = exc

    def answer() -> None:
        outcome["other"] = other.answer()

    erasing = threading.Thread(target=erase)
    erasing.start()
    _until(lambda: _waiting(db, eraser, "advisory"), db)
    other.send(**request)
    answering = threading.Thread(target=answer)
    answering.start()
    _until(lambda: "other" in outcome or _waiting(db, other_name), db)
    gate.open()
    erasing.join()
    answering.join()
    return outcome["erase"], outcome["other"]


def test_a_trace_for_a_merged_id_does_not_deadlock_its_erasure(
    merged: tuple[Engine, str], postgres_dsn: str, pg_schema: str
) -> None:
    engine, eraser = merged
    name = f"{pg_schema}-reader"
    with (
        EngineProcess(_named(postgres_dsn, name, PATIENT), pg_schema, NOW.isoformat()) as other,
        psycopg.connect(postgres_dsn, autocommit=True) as db,
    ):
        assert other.call("profile", user="u2", domain="travel")["ok"]["trace_id"]
        erased, profile = _race(engine, eraser, other, name,
                                {"op": "profile", "user": "u2", "domain": "travel"},
                                db, pg_schema)  # fmt: skip
        assert isinstance(erased, dict), f"the erasure failed: {erased}"
        assert erased["events"] == 6
        assert "ok" in profile, profile
        assert other.call("facts", user="u2") == {"ok": []}
        left = db.execute(f'SELECT count(*) FROM "{pg_schema}".traces').fetchone()
        assert left == (0,)


def test_two_processes_erasing_one_merged_person_both_finish(
    merged: tuple[Engine, str], postgres_dsn: str, pg_schema: str
) -> None:
    engine, eraser = merged
    name = f"{pg_schema}-second-eraser"
    with (
        EngineProcess(_named(postgres_dsn, name, PATIENT), pg_schema, NOW.isoformat()) as other,
        psycopg.connect(postgres_dsn, autocommit=True) as db,
    ):
        assert len(other.call("facts", user="u2")["ok"]) == 2
        erased, again = _race(engine, eraser, other, name, {"op": "erase", "user": "u2"},
                              db, pg_schema)  # fmt: skip
        assert isinstance(erased, dict), f"the erasure failed: {erased}"
        assert "ok" in again, again
        assert other.call("facts", user="u1") == {"ok": []}
