"""Faults the OS cannot give on demand, through ``FaultyStore``: a failed append, a lost reply,
a duplicate delivery, a slow store. Nothing half-written, nothing twice, reads go on."""

from __future__ import annotations

import pytest

from memkg import Engine, FrozenClock, StoreError
from memkg.events.memory import MemoryEventStore
from support.faults import FaultyStore
from support.observations import T0, obs


def _engine(store: FaultyStore) -> Engine:
    return Engine(store, clock=FrozenClock(T0))


def test_a_failed_append_stores_nothing_and_the_engine_goes_on() -> None:
    store = FaultyStore(MemoryEventStore(), at={2: "fail"})
    engine = _engine(store)
    engine.ingest(obs(value="airline:MU"))
    with pytest.raises(StoreError) as failed:
        engine.ingest(obs(value="airline:CA"))
    assert failed.value.code == "store.io"
    assert [f.value for f in engine.facts("u1")] == ["airline:MU"]  # reads go on
    assert store.head() == 1  # the first fact's event only: the failed write left nothing
    engine.ingest(obs(value="airline:CA"))
    assert [f.value for f in engine.facts("u1")] == ["airline:CA"]
    assert store.injected == {"fail": 1}


def test_a_lost_reply_then_a_retry_stores_the_write_once() -> None:
    store = FaultyStore(MemoryEventStore(), at={1: "lost_ack"})
    engine = _engine(store)
    with pytest.raises(StoreError):
        engine.ingest(obs(idempotency_key="k1"))
    retried = engine.ingest(obs(idempotency_key="k1"))  # the client retries, same key
    assert retried.duplicate
    asserted = [e for e in store.read_all() if e.type.value == "fact.asserted"]
    assert [e.fact_id for e in asserted] == [retried.fact_id]
    assert engine.facts("u1")[0].id == retried.fact_id  # the cache caught up with the store


def test_a_duplicate_delivery_is_stored_once() -> None:
    store = FaultyStore(MemoryEventStore(), rates={"duplicate": 1.0})
    engine = _engine(store)
    for value in ("airline:MU", "airline:CA"):
        engine.ingest(obs(value=value))
    engine.signal("u1", "travel", "airline.preferred", "airline:CA", "mention")
    events = list(store.read_all())
    assert len(events) == len({e.event_id for e in events}) == 4  # 2 asserted, 1 superseded, 1
    assert store.injected["duplicate"] == 3


def test_a_slow_store_delays_but_loses_nothing() -> None:
    slept: list[float] = []
    store = FaultyStore(MemoryEventStore(), rates={"delay": 1.0}, delay=0.2, sleep=slept.append)
    engine = _engine(store)
    engine.ingest(obs())
    assert slept == [0.2] and len(engine.facts("u1")) == 1
