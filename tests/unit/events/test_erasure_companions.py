"""Contract item 4, companions: stores in the event log's database lose their rows about a
subject in the log's own erasure transaction; when one fails midway nothing is removed."""

from __future__ import annotations

from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.decisions.postgres import PostgresDecisionLog
from memkg.decisions.sqlite import SqliteDecisionLog
from memkg.errors import ConfigError
from memkg.events.memory import MemoryEventStore
from memkg.events.postgres import PostgresEventStore
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import Companion, EventStore, beside
from memkg.model.decision import Decision
from support.observations import T0

MakeEvent = Any
AT = "2026-04-01T00:00:00+00:00"


class Rows:
    """An in-memory companion (the memory store has no transaction to share)."""

    tables = ("rows",)

    def __init__(self, database: str) -> None:
        self.database = database
        self.rows = {"alice": 2, "bob": 1}

    def erase_rows(self, db: Any, user_id: str) -> int:
        return self.rows.pop(user_id, 0)


class Failing:
    """A companion that fails after the others did their part (a disk error, a bug)."""

    tables = ("nothing",)

    def __init__(self, database: str) -> None:
        self.database = database
        self.calls = 0

    def erase_rows(self, db: Any, user_id: str) -> int:
        self.calls += 1
        raise RuntimeError("disk on fire")


def _database(store: EventStore) -> str:
    return str(getattr(store, "database", f"memory:{id(store)}"))


def _decisions(store: EventStore, request: pytest.FixtureRequest) -> Any:
    """The decision log beside ``store`` with one decision for alice and one for bob."""
    if isinstance(store, SqliteEventStore):
        log: Any = SqliteDecisionLog(store.path)
    elif isinstance(store, PostgresEventStore):
        log = PostgresDecisionLog(store.dsn, schema=store.schema)
    else:
        return Rows(_database(store))
    for seed, user in enumerate(("alice", "bob")):
        log.append(_decision(user, seed))
    request.addfinalizer(log.close)
    return log


def _decision(user: str, seed: int) -> Decision:
    engine = Engine(clock=FrozenClock(T0, seed=seed), config=EngineConfig(shacl=False))
    made = engine.decide(user, "finance", {"product_type": "bonds", "amount": 1})
    engine.close()
    return made


def _count(log: Any, user: str) -> int:
    return log.rows.get(user, 0) if isinstance(log, Rows) else len(log.for_user(user))


def test_companions_lose_their_rows_in_the_same_erasure(
    store: EventStore, make_event: MakeEvent, request: pytest.FixtureRequest
) -> None:
    store.append("alice", [make_event(), make_event()])
    store.append("bob", [make_event("bob")])
    log = _decisions(store, request)
    assert isinstance(log, Companion) and (beside(store, log) or isinstance(log, Rows))

    counts = store.erase_subject("alice", erasure_id="e1", at_iso=AT, companions=[log])

    assert counts.events == 2 and counts.companions[0] >= 1
    assert _count(log, "alice") == 0 and _count(log, "bob") == 1


def test_a_companion_failing_midway_leaves_everything_in_place(
    store: EventStore, make_event: MakeEvent, request: pytest.FixtureRequest
) -> None:
    kept = store.append("alice", [make_event(), make_event()], idempotency_key="k").events
    salt = store.subject_salt("alice")
    log = _decisions(store, request)
    failing = Failing(_database(store))

    with pytest.raises(Exception, match="disk on fire"):
        store.erase_subject("alice", erasure_id="e1", at_iso=AT, companions=[log, failing])

    assert failing.calls == 1
    assert store.read_stream("alice") == list(kept)
    assert store.subject_salt("alice") == salt
    assert store.append("alice", [make_event()], idempotency_key="k").duplicate
    assert not store.was_erased("alice")  # type: ignore[attr-defined]
    if not isinstance(store, MemoryEventStore):  # the decision rows came back too
        assert _count(log, "alice") == 1


def test_a_companion_kept_elsewhere_is_refused(store: EventStore, make_event: MakeEvent) -> None:
    if isinstance(store, MemoryEventStore):
        pytest.skip("the memory store has no database to compare")
    store.append("alice", [make_event()])
    elsewhere = Rows("sqlite:/somewhere/else.db")

    with pytest.raises(ConfigError, match=r"else\.db"):
        store.erase_subject("alice", erasure_id="e1", at_iso=AT, companions=[elsewhere])
    assert len(store.read_stream("alice")) == 1


def test_erasures_and_purges_in_one_erasing_block_fail_together(
    store: EventStore, make_event: MakeEvent, request: pytest.FixtureRequest
) -> None:
    alice = store.append("alice", [make_event(), make_event()], idempotency_key="k").events
    bob = store.append("bob", [make_event("bob", fact_id="f1"), make_event("bob", fact_id="f2")])
    salt = store.subject_salt("alice")
    log = _decisions(store, request)
    failing = Failing(_database(store))

    with pytest.raises(Exception, match="disk on fire"), store.erasing():
        store.erase_subject("alice", erasure_id="e1", at_iso=AT, companions=[log])
        store.purge_facts("bob", ["f1"])
        store.purge_facts("bob", ["f2"], companions=[failing])

    assert store.read_stream("alice") == list(alice) and store.subject_salt("alice") == salt
    assert store.read_stream("bob") == list(bob.events)
    assert not store.was_erased("alice")  # type: ignore[attr-defined]
    if not isinstance(store, MemoryEventStore):
        assert _count(log, "alice") == 1

    with store.erasing():
        counts = store.erase_subject("alice", erasure_id="e2", at_iso=AT, companions=[log])
        purged = store.purge_facts("bob", ["f1", "f2"], companions=[log])
    assert counts.events == 2 and purged.events == 2 and purged.companions[0] == 1
    assert store.read_stream("alice") == store.read_stream("bob") == []
    assert store.was_erased("alice")  # type: ignore[attr-defined]
