"""A writer stalled inside a batch (a paused process, a slow producer) holds the event log's
lock until it commits: another process's writes wait for it at most ``lock_timeout`` and then
fail with ``store.locked``, storing nothing, instead of waiting for ever; once the batch ends,
they go through."""

from __future__ import annotations

import pytest

from memkg import Engine, EngineConfig, FrozenClock, StoreError
from memkg.events.postgres import PostgresEventStore
from support.observations import T0, obs

pytestmark = pytest.mark.postgres


def test_a_write_behind_a_stalled_batch_fails_locked_then_goes_through(
    postgres_dsn: str, pg_schema: str
) -> None:
    config = EngineConfig(pg_schema=pg_schema)
    stalled = Engine.connect(postgres_dsn, clock=FrozenClock(T0), config=config)
    store = PostgresEventStore(postgres_dsn, schema=pg_schema, lock_timeout=0.2)
    other = Engine(store, clock=FrozenClock(T0, seed=1), config=config)
    with stalled, other:
        with stalled.store.batch(["u1"]):
            stalled.ingest(obs(user_id="u1"))  # the batch holds the log's lock from here
            with pytest.raises(StoreError) as waited:
                other.ingest(obs(user_id="u2"))
            assert waited.value.code == "store.locked"
            assert "retry" in str(waited.value)
        assert other.store.stream_version("u2") == 0  # nothing stored
        other.ingest(obs(user_id="u2"))  # the batch committed: the retry goes through
        assert [f.user_id for f in other.facts("u2")] == ["u2"]
        assert [f.user_id for f in other.facts("u1")] == ["u1"]
