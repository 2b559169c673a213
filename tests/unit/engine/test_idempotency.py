"""Idempotency keys: a retry is stored once, a reused key with another body is refused, and
erasure by audit id takes the key with the fact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, ValidationFailed
from memkg.events.sqlite import SqliteEventStore
from memkg.model.event import EventType, NewEvent
from support.observations import T0, obs


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    clock = FrozenClock(T0)
    if request.param == "memory":
        yield Engine(clock=clock)
    elif request.param == "sqlite":
        with Engine.open(tmp_path / "m.db", clock=clock) as engine:
            yield engine
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        schema = request.getfixturevalue("pg_schema")
        with Engine.connect(dsn, schema=schema, clock=clock) as engine:
            yield engine


def test_a_retry_with_the_same_body_is_a_duplicate(any_engine: Engine) -> None:
    first = any_engine.ingest(obs(idempotency_key="k1"))
    again = any_engine.ingest(obs(idempotency_key="k1"))
    assert again.duplicate and again.fact_id == first.fact_id


def test_a_reused_key_with_another_body_is_refused(any_engine: Engine) -> None:
    any_engine.ingest(obs(idempotency_key="k1"))
    head = any_engine.store.head()
    with pytest.raises(ValidationFailed) as refused:
        any_engine.ingest(obs(value="airline:CA", idempotency_key="k1"))
    assert refused.value.report.codes == ["idempotency.mismatch"]
    assert refused.value.report.problems[0].path == "$.idempotency_key"
    assert any_engine.store.head() == head
    [outcome] = any_engine.ingest_many([obs(confidence=0.5, idempotency_key="k1")])
    assert not outcome.accepted and outcome.report is not None
    assert outcome.report.codes == ["idempotency.mismatch"]


def test_erasure_by_audit_id_removes_the_key_and_a_retry_stores_anew(
    any_engine: Engine, tmp_path: Path
) -> None:
    audited = obs(idempotency_key="secret-key-text", provenance={"audit_log_id": "aud1"})
    first = any_engine.ingest(audited)
    any_engine.ingest(obs(key="seat.preference", value="aisle", idempotency_key="other"))
    [receipt] = any_engine.erase_audit_id("aud1")
    assert receipt.removed["idempotency_keys"] == 1
    for path in tmp_path.iterdir():
        assert b"secret-key-text" not in path.read_bytes(), path.name
    again = any_engine.ingest(audited)
    assert not again.duplicate and again.fact_id != first.fact_id
    assert [f.value for f in any_engine.facts("u1") if f.key == "airline.preferred"] == [
        "airline:MU"
    ]
    assert any_engine.ingest(
        obs(key="seat.preference", value="aisle", idempotency_key="other")
    ).duplicate


def test_a_key_is_scoped_by_domain(any_engine: Engine) -> None:
    """Two agents of one person, in two domains, each number their own turns: the same key in
    another domain is another write, not a retry (nor a mismatch)."""
    travel = any_engine.ingest(obs(idempotency_key="turn-1"))
    health = any_engine.ingest(obs(domain="health", key="timezone", value="Asia/Shanghai",
                                   idempotency_key="turn-1"))  # fmt: skip
    assert not health.duplicate and health.fact_id != travel.fact_id
    again = any_engine.ingest(obs(domain="health", key="timezone", value="Asia/Shanghai",
                                  idempotency_key="turn-1"))  # fmt: skip
    assert again.duplicate and again.fact_id == health.fact_id
    assert any_engine.ingest(obs(idempotency_key="turn-1")).fact_id == travel.fact_id
    assert {f.domain for f in any_engine.facts("u1")} == {"travel", "health"}


def _as_an_older_release_left_it(engine: Engine, schema_version: int) -> None:
    """The keys as releases before domain scoping stored them: an observation's key as sent,
    beside a key of the store's own (a migration's), and the older schema's mark. Releases
    before request digests stored none: the write of ``old`` carries none."""
    store = engine.store
    store.append("u1", [_migrated(engine)], idempotency_key="migration:plan:f1")
    first = store.read_stream("u1")[2].seq  # the write of ``old``
    if isinstance(store, SqliteEventStore):
        with store._db:
            store._db.execute("UPDATE idempotency SET key = substr(key, 8)"
                              " WHERE key LIKE 'travel/%'")  # fmt: skip
            store._db.execute("UPDATE events SET payload = json_remove(payload, '$.request')"
                              " WHERE seq = ?", (first,))  # fmt: skip
            store._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                              (str(schema_version),))  # fmt: skip
    else:
        with store._tx() as db:
            db.execute(f"UPDATE {store._s}.idempotency SET key = substr(key, 8)"
                       " WHERE key LIKE 'travel/%%'")  # fmt: skip
            db.execute(f"UPDATE {store._s}.events SET payload = payload - 'request'"
                       " WHERE seq = %s", (first,))  # fmt: skip
            db.execute(f"UPDATE {store._s}.meta SET value = %s WHERE key = 'schema_version'",
                       (str(schema_version),))  # fmt: skip


def _migrated(engine: Engine) -> NewEvent:
    """A fact as a migration writes it: asserted in the travel domain, with no request."""
    first = engine.store.read_stream("u1")[0]
    fact = {**first.payload["fact"], "id": "f1", "value": "airline:CA"}
    return NewEvent(event_id="evt_plan_1", user_id="u1", type=EventType.FACT_ASSERTED,
                    domain="travel", recorded_at=T0, payload={"fact": fact},
                    fact_id="f1")  # fmt: skip


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_keys_an_older_release_stored_are_scoped_when_the_store_opens(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A retry sent across the upgrade still finds its write; a migration's key stays as is."""
    clock = FrozenClock(T0)
    if backend == "sqlite":
        path = tmp_path / "m.db"

        def open_engine() -> Engine:
            return Engine.open(path, clock=clock)

        older = 2
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        schema = request.getfixturevalue("pg_schema")

        def open_engine() -> Engine:
            return Engine.connect(dsn, schema=schema, clock=clock)

        older = 1
    # a user's keys "k1" and "travel/k1" (scoped, k1 would meet travel/k1 not moved yet)
    stored = [obs(idempotency_key="k1"), obs(key="seat.preference", value="aisle",
                                             idempotency_key="travel/k1"),
              obs(key="cabin.class", value="economy", idempotency_key="old")]  # fmt: skip
    with open_engine() as engine:
        first = [engine.ingest(o).fact_id for o in stored]
        _as_an_older_release_left_it(engine, older)
    with open_engine() as engine:
        again = [engine.ingest(o) for o in stored]
        assert [(r.duplicate, r.fact_id) for r in again] == [(True, f) for f in first]
        other = engine.ingest(obs(domain="health", key="timezone", value="UTC",
                                  idempotency_key="k1"))  # fmt: skip
        assert not other.duplicate
        plan = engine.store.append("u1", [_migrated(engine)], idempotency_key="migration:plan:f1")
        assert plan.duplicate
    with open_engine() as engine:  # opened again: scoped once, not twice
        assert engine.ingest(obs(idempotency_key="k1")).duplicate
