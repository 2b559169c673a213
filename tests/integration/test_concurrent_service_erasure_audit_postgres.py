"""On PostgreSQL, keys and audit in the memory's schema, two processes (the service, and
``memkg erase`` or another replica): a request about a person served by one while the other
erases the person leaves the person's id in the clear nowhere in the audit.

The erasure pseudonymises the audit (``PostgresAccessStore.erase_rows``) at the start of its
transaction, under READ COMMITTED: a record inserted after that statement would not be
rewritten, and the request's check (``Gate.erased_since``), reading the purge count before
the erasure commits, would see no erasure. So the erasure locks the audit table against
inserts until it commits; the request's record then waits, and its check sees the erasure.

The erasure is paused, not timed, just after its audit statement; it resumes once the request
answered, or once the request is seen waiting for a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("mcp")
psycopg = pytest.importorskip("psycopg")

from memkg import Engine, FrozenClock  # noqa: E402
from memkg.access import Keyring  # noqa: E402
from memkg.access.postgres import PostgresAccessStore  # noqa: E402
from memkg.service.auth import RateLimiter  # noqa: E402
from memkg.service.http import create_app  # noqa: E402
from memkg.service.settings import ServiceSettings  # noqa: E402
from support.live_service import request, serve, until  # noqa: E402
from support.observations import T0, obs  # noqa: E402

PERSON = "traveller-pg7"


@pytest.fixture
def two_processes(postgres_dsn: str, pg_schema: str) -> Iterator[tuple[Engine, Engine, Keyring]]:
    with (
        Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(T0)) as service,
        Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(T0)) as other,
    ):
        keyring = Keyring(PostgresAccessStore(postgres_dsn, schema=pg_schema), service.clock)
        try:
            yield service, other, keyring
        finally:
            keyring.store.close()


def test_a_request_served_while_another_process_erases_the_person_names_them_nowhere(
    two_processes: tuple[Engine, Engine, Keyring], postgres_dsn: str, pg_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    service, other, keyring = two_processes
    service.ingest(obs(user_id=PERSON))
    agent = keyring.create("agent", ["read", "write"], ["*"]).token
    app = create_app(service, keyring=keyring, settings=ServiceSettings(rate_limit=0),
                     limiter=RateLimiter(0))  # fmt: skip

    eraser: list[threading.Thread] = []
    paused, resume = threading.Event(), threading.Event()
    original = PostgresAccessStore.erase_rows

    def erase_rows(self: PostgresAccessStore, db: Any, user_id: str) -> int:
        changed = original(self, db, user_id)
        if threading.current_thread() in eraser:  # the other process's erasure, mid-transaction
            paused.set()
            resume.wait(60)
        return changed

    monkeypatch.setattr(PostgresAccessStore, "erase_rows", erase_rows)
    erasing = threading.Thread(target=other.erase, args=(PERSON,), daemon=True)
    eraser.append(erasing)
    erasing.start()
    until(paused.is_set, "the erasure pseudonymised the audit, not yet committed")

    def waiting() -> bool:
        with psycopg.connect(postgres_dsn, autocommit=True) as db:
            row = db.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
        return bool(row and row[0])

    answer: list[tuple[int, Any]] = []
    with serve(app) as base:
        reader = threading.Thread(target=lambda: answer.append(
            request(base, agent, "GET", f"/v1/users/{PERSON}/facts")), daemon=True)  # fmt: skip
        reader.start()
        until(lambda: answer or waiting(), "the request answered, or waits for the erasure")
        resume.set()
        erasing.join(timeout=60)
        reader.join(timeout=60)
    assert not erasing.is_alive() and answer and answer[0][0] == 200, answer
    named = [(r.action, r.subject) for r in keyring.audit(subject=PERSON)]
    assert named == [], f"the erased person is named in the audit after their erasure: {named}"
