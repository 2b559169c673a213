"""The access audit failing after a request took effect: the client is told what happened.

A write stored or a decision logged, then the audit record cannot be written: answered 503,
the client would retry and store the write twice (without an idempotency key) or log a second
decision. The record is tried again on a fresh connection (a dropped one is the common
cause); if it still cannot be written, a change answers what it did, saying in a header that
it is unaudited (logged and counted), and a read, which changed nothing, answers 503 and
shows nothing: no memory leaves without its record."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import psycopg
import pytest

from memkg import Engine, EngineConfig, FrozenClock, StoreError
from memkg.access import Keyring, MemoryAccessStore
from memkg.access.model import AccessRecord
from memkg.service.auth import RateLimiter
from memkg.service.http import create_app
from memkg.service.settings import ServiceSettings
from support.observations import T0, obs
from support.service import client, token


@pytest.fixture
def pg_engine(postgres_dsn: str, pg_schema: str) -> Iterator[Engine]:
    with Engine.connect(postgres_dsn, clock=FrozenClock(T0),
                        config=EngineConfig(pg_schema=pg_schema)) as engine:  # fmt: skip
        yield engine


def _events(engine: Engine, kind: str) -> int:
    return sum(e.type.value == kind for e in engine.store.read_stream("u1"))


@pytest.mark.postgres
def test_a_dropped_audit_connection_costs_neither_the_answer_nor_the_record(
    pg_engine: Engine, postgres_dsn: str, pg_schema: str
) -> None:
    from memkg.access.postgres import PostgresAccessStore

    store = PostgresAccessStore(postgres_dsn, schema=pg_schema)
    try:
        keyring = Keyring(store, pg_engine.clock)
        app = create_app(pg_engine, keyring=keyring, settings=ServiceSettings(rate_limit=0),
                         limiter=RateLimiter(0))  # fmt: skip
        admin = client(app, token(keyring))
        ingest, decide = pg_engine.ingest, pg_engine.decide

        def drop() -> None:  # another session ends the audit's connection mid-request
            pid = store._connection().info.backend_pid  # type: ignore[attr-defined]
            with psycopg.connect(postgres_dsn, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (pid,))

        pg_engine.ingest = lambda *a, **k: (ingest(*a, **k), drop())[0]  # type: ignore[method-assign]
        pg_engine.decide = lambda *a, **k: (decide(*a, **k), drop())[0]  # type: ignore[method-assign]
        stored = admin.post("/v1/observations", json=obs())
        assert stored.status_code == 201, stored.json()
        made = admin.post("/v1/users/u1/decisions", json={"domain": "travel", "context": {}})
        assert made.status_code == 201, made.json()
        assert _events(pg_engine, "fact.asserted") == 1
        assert len(pg_engine.decision_log.for_user("u1")) == 1
        assert sorted(r.action for r in keyring.audit(subject="u1")) == ["decide", "ingest"]
    finally:
        store.close()


class _Unwritable(MemoryAccessStore):
    """An access store whose audit cannot be written (a disk full, a database gone)."""

    def __init__(self) -> None:
        super().__init__()
        self.tries = 0

    def record(self, records: Sequence[AccessRecord]) -> None:
        self.tries += 1
        raise StoreError("access store: the disk is full", code="store.full")


def test_an_audit_that_cannot_be_written_withholds_reads_and_owns_up_to_changes() -> None:
    engine = Engine(clock=FrozenClock(T0))
    store = _Unwritable()
    keyring = Keyring(store, engine.clock)
    settings = ServiceSettings(rate_limit=0)
    app = create_app(engine, keyring=keyring, settings=settings, limiter=RateLimiter(0))
    admin = client(app, token(keyring))

    stored = admin.post("/v1/observations", json=obs())
    assert stored.status_code == 201 and stored.json()["fact_id"]
    assert stored.headers["memkg-audit"] == "unrecorded"
    assert store.tries == 2  # tried again once
    made = admin.post("/v1/users/u1/decisions", json={"domain": "travel", "context": {}})
    assert made.status_code == 201 and made.headers["memkg-audit"] == "unrecorded"
    assert len(engine.decision_log.for_user("u1")) == 1

    read = admin.get("/v1/users/u1/facts")
    assert read.status_code == 503 and read.json()["error"] == "store.full"
    assert "airline" not in read.text
    metrics = admin.get("/metrics").text
    assert "memkg_audit_unrecorded_total 2.0" in metrics


def test_a_read_sent_as_a_post_shows_nothing_unaudited() -> None:
    """Replaying a decision, a rules diff and a migration's dry run change nothing, though
    they are POSTs: they show memory (a dry run's examples, a replay's input), so they are
    withheld as a GET is."""
    engine = Engine(clock=FrozenClock(T0))
    store = _Unwritable()
    keyring = Keyring(store, engine.clock)
    app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=0),
                     limiter=RateLimiter(0))  # fmt: skip
    admin = client(app, token(keyring))
    made = admin.post("/v1/users/u1/decisions", json={"domain": "travel", "context": {}})
    assert made.status_code == 201
    replay = admin.post(f"/v1/decisions/{made.json()['decision_id']}/replay")
    assert replay.status_code == 503 and replay.json()["error"] == "store.full"
    dry = admin.post("/v1/admin/migrations/dry-run", json={"plan": "health/diet_organ_meat"})
    assert dry.status_code == 503 and "examples" not in dry.text
    diff = admin.post("/v1/admin/rules/diff", json={"replay": 5})
    assert diff.status_code == 503 and diff.json()["error"] == "store.full"


def test_records_that_could_not_be_pseudonymised_after_an_erasure_are_still_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request about someone erased while it ran pseudonymises its own records once written
    (``Gate.erased_since``); if that fails, the records stand written: the answer is not marked
    unrecorded, nor a read withheld, and the failure is counted and tried twice."""
    from memkg.service.gate import Gate

    engine = Engine(clock=FrozenClock(T0))
    engine.ingest(obs())
    keyring = Keyring(MemoryAccessStore(), engine.clock)
    tries: list[str] = []

    def failing(user_id: str, record_ids: Sequence[str]) -> int:
        tries.append(user_id)
        raise StoreError("access store: the disk is full", code="store.full")

    monkeypatch.setattr(Gate, "erased_since", lambda self, before, named: ["u1"])
    monkeypatch.setattr(keyring, "pseudonymise_records", failing)
    app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=0),
                     limiter=RateLimiter(0))  # fmt: skip
    admin = client(app, token(keyring))
    read = admin.get("/v1/users/u1/facts")
    assert read.status_code == 200 and "memkg-audit" not in read.headers
    assert [f["value"] for f in read.json()["facts"]] == ["airline:MU"]
    assert tries == ["u1", "u1"]
    assert [r.action for r in keyring.audit(subject="u1")] == ["facts"]
    metrics = admin.get("/metrics").text
    assert "memkg_audit_unrecorded_total 0.0" in metrics
