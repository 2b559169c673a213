"""Several engine processes share one memory through PostgreSQL: facts and decisions."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from memkg import ConcurrencyConflict, Engine, EngineConfig, FrozenClock, MemkgError
from memkg.decisions.postgres import PostgresDecisionLog
from memkg.events.postgres import PostgresEventStore
from support.observations import CONSENTED, obs

pytestmark = pytest.mark.postgres


def test_two_engines_share_facts_and_decisions(postgres_dsn: str, pg_schema: str) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, 22, 15, tzinfo=UTC))
    with (
        Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as writer,
        Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as reader,
    ):
        assert isinstance(writer.decision_log, PostgresDecisionLog)
        age = writer.ingest(obs(domain="health", key="child.age", value=3, source="profile",
                                **CONSENTED))  # fmt: skip
        assert [f.id for f in reader.facts("u1", "health")] == [age.fact_id]

        decision = writer.decide("u1", "health", {"symptom": "fever"})
        assert [d.decision_id for d in reader.decisions("u1")] == [decision.decision_id]
        assert reader.replay(decision.decision_id).reproduced

        receipt = reader.erase("u1")
        assert receipt.removed["decisions"] == 1
        assert writer.facts("u1") == [] and writer.decisions("u1") == []


def test_the_configuration_names_the_database(postgres_dsn: str, pg_schema: str) -> None:
    config = EngineConfig(db=postgres_dsn, pg_schema=pg_schema)
    with Engine(config=config) as engine, Engine.open(postgres_dsn, config=config) as other:
        assert isinstance(engine.store, PostgresEventStore)
        assert engine.store.schema == other.store.schema == pg_schema  # type: ignore[attr-defined]
        written = engine.ingest(obs(value="airline:CA"))
        assert other.version("u1") == written.version == 1
    with pytest.raises(ValueError, match="pg_schema"):
        EngineConfig(db=postgres_dsn, pg_schema="Robert'); DROP")


def test_concurrent_plain_writes_to_one_user_never_surface_a_conflict(
    postgres_dsn: str, pg_schema: str
) -> None:
    """Two engines (two connections), four threads, all writing to the same two users:
    without retries most of these writes met ``store.conflict``; now every one lands."""
    engines = [Engine.connect(postgres_dsn, schema=pg_schema) for _ in range(2)]
    values = ["airline:CA", "airline:MU", "airline:CZ", "airline:HO", "airline:SQ"]
    written: list[str] = []
    failed: list[BaseException] = []

    def work(engine: Engine, worker: int) -> None:
        for i in range(15):
            try:
                source = ("dialogue", "behavior", "profile")[(worker + i) % 3]
                user = f"u{i % 2}"
                result = engine.ingest(obs(user_id=user, value=values[i % 5], source=source))
                written.append(result.fact_id)
            except BaseException as exc:  # collected, asserted below
                failed.append(exc)

    threads = [threading.Thread(target=work, args=(engines[w % 2], w)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failed == []
        assert len(set(written)) == 60
        stored = {e.fact_id for u in ("u0", "u1") for e in engines[0].read_events(u)
                  if e.type.value == "fact.asserted"}  # fmt: skip
        assert set(written) <= stored
        for user in ("u0", "u1"):
            versions = [e.version for e in engines[0].read_events(user)]
            assert versions == list(range(1, len(versions) + 1))
        assert sum(e.conflicts.surfaced for e in engines) == 0
    finally:
        for engine in engines:
            engine.close()


def test_a_conditional_write_on_postgres_still_fails_fast(
    postgres_dsn: str, pg_schema: str
) -> None:
    with (
        Engine.connect(postgres_dsn, schema=pg_schema) as one,
        Engine.connect(postgres_dsn, schema=pg_schema) as two,
    ):
        seen = one.version("u1")
        two.ingest(obs(value="airline:CA"))
        with pytest.raises(ConcurrencyConflict):
            one.ingest(obs(value="airline:MU"), expected_version=seen)
        assert one.conflicts.retried == 0
        again = one.ingest(obs(value="airline:MU"), expected_version=one.version("u1"))
        assert again.version == two.version("u1") == 3  # asserted, and superseded the other


def test_another_process_purge_or_erasure_reaches_every_cache(
    postgres_dsn: str, pg_schema: str
) -> None:
    """A replica that cached a user's memory and graph sees another replica's erasure by
    audit id (which keeps the stream version) and a full erasure followed by new writes that
    bring the stream back to the version it had cached."""
    with (
        Engine.connect(postgres_dsn, schema=pg_schema) as eraser,
        Engine.connect(postgres_dsn, schema=pg_schema) as reader,
    ):
        audited = {"provenance": {"audit_log_id": "aud-7"}}
        eraser.ingest(obs(value="airline:CA", source="profile", **audited))
        eraser.ingest(obs(key="airline.avoided", value=["airline:MU"]))
        assert len(reader.facts("u1")) == 2 and len(reader.edges("u1", "travel")) == 2

        eraser.erase_audit_id("aud-7")
        assert [f.key for f in reader.facts("u1")] == ["airline.avoided"]
        assert [e.relation for e in reader.edges("u1", "travel")] == ["airline.avoided"]

        assert reader.version("u1") == 2
        eraser.erase("u1")
        eraser.ingest(obs(key="airline.avoided", value=["airline:SQ"]))
        eraser.ingest(obs(value="airline:HO"))
        assert eraser.version("u1") == 2  # the version the reader cached, another stream
        now = {f.key: f.value for f in reader.facts("u1")}
        assert now == {"airline.avoided": ["airline:SQ"], "airline.preferred": "airline:HO"}
        assert {e.target for e in reader.edges("u1", "travel")} == {"airline:SQ", "airline:HO"}


def _drop_connections(dsn: str, schema: str) -> int:
    """What a server restart, a failover or a proxy's idle timeout does to an engine's idle
    connections: the server ends them (those of the adapters on ``schema``)."""
    import gc

    import psycopg

    from memkg.postgres import PgAdapter

    pids = [adapter._db.info.backend_pid for adapter in gc.get_objects()
            if isinstance(adapter, PgAdapter) and adapter.schema == schema
            and adapter._db is not None and not adapter._db.broken]  # fmt: skip
    with psycopg.connect(dsn, autocommit=True) as db:
        for pid in pids:
            db.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(pids)


def test_connections_the_server_dropped_fail_no_request(postgres_dsn: str, pg_schema: str) -> None:
    """After a restart each adapter failed its first call (a decision twice: the event store,
    then the decision log) with ``store.error``; a read, or a transaction nothing ran in
    yet, is sent again on a new connection."""
    clock = FrozenClock(datetime(2026, 5, 1, 22, 15, tzinfo=UTC))
    with Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as engine:
        engine.ingest(obs(domain="health", key="child.age", value=3, source="profile",
                          **CONSENTED))  # fmt: skip
        first = engine.decide("u1", "health", {"symptom": "fever"})
        calls = (
            lambda: engine.facts("u1"),
            lambda: engine.decide("u1", "health", {"symptom": "fever"}),
            lambda: engine.ingest(obs(key="seat.preference", value="aisle")),
            lambda: engine.replay(first.decision_id),
            lambda: engine.recall("u1", "age"),
        )
        for call in calls:
            assert _drop_connections(postgres_dsn, pg_schema) > 0
            call()
        assert engine.recall("u1", "age").trace_id is not None
        assert len(engine.facts("u1")) == 2


def test_a_connection_dropped_inside_a_batch_stores_none_of_it(
    postgres_dsn: str, pg_schema: str
) -> None:
    """A read inside the batch once replaced the dropped connection and the next append
    committed on the new one alone: the batch's earlier writes were lost and the caller told
    every write was stored. The batch now fails whole, and nothing of it is stored."""
    clock = FrozenClock(datetime(2026, 5, 1, 22, 15, tzinfo=UTC))
    with Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as engine:
        engine.ingest(obs(user_id="u0"))  # the store and its connections are there
        store, append = engine.store, engine.store.append

        def dropping(*args: object, **kwargs: object) -> object:
            done = append(*args, **kwargs)  # type: ignore[arg-type]
            store.append = append  # type: ignore[method-assign]
            assert _drop_connections(postgres_dsn, pg_schema) > 0
            return done

        store.append = dropping  # type: ignore[method-assign]
        with pytest.raises(MemkgError):
            engine.ingest_many([obs(user_id="a1"), obs(user_id="b1")])
        assert engine.facts("a1") == [] and engine.facts("b1") == []
