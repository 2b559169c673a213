"""A user loaded from a snapshot builds the facts a read can tell apart, not the history.

The superseded facts no read of their key tells apart (``arbitration.claims.silent``) stay in
the snapshot's history documents, unread, until something asks for the whole history; what the
load builds, what a decision and a write leave unread, and what a later snapshot carries as it
came are counted, not timed. Everything read from such a load equals what folding the log
gives, down to the order of the facts.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.arbitration.claims import silent
from memkg.config import EngineConfig
from memkg.engine import snapshots
from memkg.events.projection import UserMemory
from memkg.events.sqlite import SqliteEventStore
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import LIVE_STATUSES, FactStatus

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
NIGHT = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)
CONFIG = EngineConfig(shacl=False)
RESTATED = 120
LEISURE = {"trip_type": "leisure"}


def _history(engine: Engine, clock: FrozenClock) -> dict[str, str]:
    """Mei's memory: a long silent history, and superseded facts a read still tells apart
    (an explicit change, a turn's claims, a claim in a context slot). Returns fact ids."""
    say = {"user_id": "mei", "source": "profile", "provenance": CONSENT}
    for n in range(RESTATED):  # each restatement supersedes the one before: silent
        engine.ingest({**say, "domain": "health", "key": "child.age", "value": 3 + n % 2,
                       "confidence": 0.5 + (n % 5) / 10})  # fmt: skip
        clock.advance(timedelta(minutes=1))
    airline = {"user_id": "mei", "domain": "travel", "key": "airline.preferred",
               "source": "dialogue"}  # fmt: skip
    first = engine.ingest({**airline, "value": "airline:MU"})
    engine.ingest({**airline, "value": "airline:CA", "change": True})  # replaced, listed
    seat = {"user_id": "mei", "domain": "travel", "key": "seat.preference",
            "source": "dialogue", "confidence": 0.9}  # fmt: skip
    engine.ingest({**seat, "value": "aisle"})
    turn = engine.ingest({**seat, "value": "window", "scope": "turn", "session_id": "s9",
                          "provenance": {"source_ref": "t3"}})  # fmt: skip
    clock.advance(timedelta(minutes=1))
    engine.ingest({**seat, "value": "middle", "scope": "turn", "session_id": "s9",
                   "provenance": {"source_ref": "t4"}})  # fmt: skip
    cabin = {"user_id": "mei", "domain": "travel", "key": "cabin.class", "source": "dialogue",
             "context": LEISURE}  # fmt: skip
    slot = engine.ingest({**cabin, "value": "first"})
    engine.ingest({**cabin, "value": "business"})
    return {"changed": first.fact_id, "turn": turn.fact_id, "slot": slot.fact_id}


def _store(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "m.db"
    clock = FrozenClock(NIGHT - timedelta(days=1))
    with Engine.open(path, clock=clock, config=CONFIG) as engine:
        ids = _history(engine, clock)
        assert engine.projections.keep_snapshot("mei")
    return path, ids


def _reads(engine: Engine) -> list[Any]:
    """What decisions and reads of Mei's keys give, in and out of her session and turns."""
    found: list[Any] = []
    for scope in ({}, {"session_id": "s9"}, {"session_id": "s9", "turn": "t3"}):
        made = engine.decide("mei", "travel", LEISURE, decision="offers", **scope)
        found.append(made.model_dump(exclude={"timings", "decision_id"}))
        for domain, key in (("health", "child.age"), ("travel", "airline.preferred"),
                            ("travel", "seat.preference"), ("travel", "cabin.class")):  # fmt: skip
            found.append(engine.resolve("mei", domain, key, context=LEISURE, **scope))
    return found


def _copy(path: Path, name: str) -> Path:
    copy = path.with_name(name)
    shutil.copy(path, copy)
    return copy


def test_a_load_builds_the_facts_a_read_tells_apart_and_reads_as_the_fold_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, ids = _store(tmp_path)
    with Engine.open(_copy(path, "a.db"), clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        memory = engine.memory("mei")
        assert memory.deferred is not None
        unread = memory.deferred.count
        from_snapshot = _reads(engine)
        assert engine.memory("mei").deferred is memory.deferred  # decisions read none of it
        built = dict(memory._facts)
        whole = memory.facts  # asking for the whole builds the rest, in its place
        assert memory.deferred is None
        assert len(whole) == len(built) + unread
        assert all(whole[i] is fact for i, fact in built.items())
        whole = memory.facts
    with monkeypatch.context() as patch:  # the same store, its snapshots not read
        patch.setattr(snapshots, "FORMAT", "another format")
        with Engine.open(_copy(path, "b.db"), clock=FrozenClock(NIGHT), config=CONFIG) as other:
            folded = other.memory("mei")
            assert folded.deferred is None
            assert _reads(other) == from_snapshot
            assert list(folded.facts) == list(whole)  # the same facts in the same order
            for fact_id, fact in folded.facts.items():
                assert whole[fact_id].__dict__ == fact.__dict__
                assert whole[fact_id].model_fields_set == fact.model_fields_set
    # what was left unread is exactly the silent superseded facts; the rest was built
    holding = {i for i, f in whole.items() if f.status in LIVE_STATUSES}
    quiet = {i for i, f in whole.items() if silent(f, holding)}
    assert unread == len(quiet) >= RESTATED - 1
    assert set(built) == set(whole) - quiet
    # superseded, yet told apart by a read: replaced by a change, a turn's, in a context slot
    for name in ("changed", "turn", "slot"):
        assert whole[ids[name]].status is FactStatus.SUPERSEDED
        assert ids[name] in built, name


def test_a_write_and_a_sweep_leave_the_history_unread_and_a_history_read_builds_it(
    tmp_path: Path,
) -> None:
    path, _ = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        say = {"user_id": "mei", "domain": "health", "key": "child.age", "source": "profile",
               "provenance": CONSENT}  # fmt: skip
        engine.ingest({**say, "value": 5})
        engine.expire_due("mei")
        memory = engine.memory("mei")
        assert memory.deferred is not None
        assert memory.count == memory.built + memory.deferred.count
        ages = engine.history("mei", "child.age")
        assert memory.deferred is None
        assert len(ages) == RESTATED + 1
        assert [f.status for f in ages].count(FactStatus.ACTIVE) == 1


def test_a_later_snapshot_carries_the_unread_history_as_it_came(tmp_path: Path) -> None:
    path, _ = _store(tmp_path)
    clock = FrozenClock(NIGHT)
    with Engine.open(path, clock=clock, config=CONFIG) as engine:
        first = engine.memory("mei").deferred
        assert first is not None
        say = {"user_id": "mei", "domain": "health", "key": "child.age", "source": "profile",
               "provenance": CONSENT}  # fmt: skip
        for age in (5, 6):
            engine.ingest({**say, "value": age})
            clock.advance(timedelta(minutes=1))
        assert engine.memory("mei").deferred is first
        assert engine.projections.keep_snapshot("mei")
        expected = engine.memory("mei").facts
    store = SqliteEventStore(path)
    version, _seq, body = store.read_snapshot("mei", snapshots.FORMAT) or (0, 0, b"")
    store.close()
    _state, documents = snapshots.decode(body)
    # the unread documents as they came, then one of the facts silent since (the ages 4, 5)
    assert documents[: len(first.documents)] == first.documents
    assert len(documents) == len(first.documents) + 1
    with Engine.open(path, clock=clock, config=CONFIG) as engine:
        memory = engine.memory("mei")
        assert memory.version == version
        assert memory.deferred is not None and memory.deferred.count == first.count + 2
        assert list(memory.facts) == list(expected)
        assert all(memory.facts[i].__dict__ == f.__dict__ for i, f in expected.items())


def test_a_confirmation_of_a_fact_that_does_not_hold_builds_the_history_first(
    tmp_path: Path,
) -> None:
    """A deferred fact is silent only while no fact that stopped holding holds again."""
    path, _ = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        memory = engine.memory("mei")
        live = memory.live_claims("travel", "airline.preferred")[0]
        engine.retract("mei", live.id, "said by mistake")
        assert engine.memory("mei").deferred is not None
        store = engine.store
        event = NewEvent(event_id="evt_revive", type=EventType.FACT_CONFIRMED, user_id="mei",
                         domain="travel", payload={"fact_id": live.id}, recorded_at=NIGHT,
                         fact_id=live.id)  # fmt: skip
        store.append("mei", [event])
        revived = engine.memory("mei")
        assert isinstance(revived, UserMemory)
        assert revived.deferred is None
        assert revived.facts[live.id].status is FactStatus.ACTIVE


def test_a_freeze_and_its_review_leave_the_history_unread(tmp_path: Path) -> None:
    """``key.frozen`` and ``review.resolved`` events name their review where other events name
    a fact: folding them asks the memory for an id no fact has, which builds nothing."""
    path, _ = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        unread = engine.memory("mei").deferred
        assert unread is not None
        behaviour = {"user_id": "mei", "domain": "travel", "key": "airline.preferred",
                     "source": "behavior", "confidence": 0.95}  # fmt: skip
        engine.ingest({**behaviour, "value": "airline:CZ"})
        frozen = engine.store.read_stream("mei")[-1]
        assert frozen.type is EventType.KEY_FROZEN
        memory = engine.memory("mei")
        assert memory.fact(frozen.fact_id or "") is None
        assert memory.deferred is unread
        assert engine.resolve("mei", "travel", "airline.preferred").outcome.value == "frozen"
        [review] = engine.review_queue()
        engine.resolve_review(review.review_id, "airline:CZ", "behaviour holds", reviewer="ops")
        assert engine.memory("mei").deferred is unread
        assert engine.resolve("mei", "travel", "airline.preferred").value == "airline:CZ"


class _PausingOrder(list[str]):
    """The deferred history's ids, which pause once iterated (the build is then about to put
    its merged facts in place) until a write on another thread has finished or has had its
    chance to run."""

    def __init__(self, ids: list[str], built: threading.Event, written: threading.Event):
        super().__init__(ids)
        self.built, self.written = built, written

    def __iter__(self) -> Iterator[str]:
        yield from super().__iter__()
        self.built.set()
        self.written.wait(timeout=0.5)


def test_a_history_read_building_the_history_loses_no_write_made_meanwhile(
    tmp_path: Path,
) -> None:
    """A history read builds the deferred facts under no engine lock; a write to the same user
    on another thread lands in the memory the build puts in place, not in the one it left."""
    path, _ = _store(tmp_path)
    built, written = threading.Event(), threading.Event()
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        memory = engine.memory("mei")
        assert memory.deferred is not None
        seat = memory.live_claims("travel", "seat.preference")[0]
        memory.deferred.order = _PausingOrder(memory.deferred.order, built, written)  # type: ignore[attr-defined]
        reader = threading.Thread(target=engine.history, args=("mei", "child.age"))
        reader.start()
        assert built.wait(timeout=30)

        def retract() -> None:
            engine.retract("mei", seat.id, "said by mistake")
            written.set()

        writer = threading.Thread(target=retract)
        writer.start()
        reader.join()
        writer.join()
        assert engine.memory("mei").deferred is None
        assert engine.fact("mei", seat.id).status is FactStatus.RETRACTED
        live = engine.memory("mei").live_claims("travel", "seat.preference")
        assert seat.id not in {f.id for f in live}


def test_a_history_built_by_a_read_counts_at_once_against_the_memory_bound(
    tmp_path: Path,
) -> None:
    """The cache measures a user's graph when it is read or written; a read that builds the
    history it held unread measures it again as soon as it is built, so what is resident is
    counted in full and the bound evicts by it (no wait for that user's next read)."""
    path, _ = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        projections = engine.projections
        held = projections.memory("mei")
        assert held.deferred is not None
        before = projections.graph_bytes
        engine.history("mei", "child.age")  # builds the history, after the read measured it
        assert held.deferred is None
        resident = projections._graphs.resident("mei")
        assert resident is not None
        assert projections.graph_bytes == resident[0].estimated_bytes() > before


def test_a_history_build_that_evicts_takes_no_lock_against_a_read_in_progress(
    tmp_path: Path,
) -> None:
    """A read outside the projections' lock (a key's history) that builds the history and pushes
    the cache over its bound evicts another user; the cache tells the projections, which
    take their own lock, only after releasing its own: a read holding the projections' lock
    and waiting for the cache's meanwhile goes on (both orders at once were a deadlock). On a
    regression the engine is left open: closing it would wait for a lock a stuck thread holds."""
    path, _ = _store(tmp_path)
    engine = Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG)
    engine.ingest({"user_id": "ada", "domain": "travel", "key": "seat.preference",
                   "value": "aisle", "source": "dialogue"})  # fmt: skip
    projections = engine.projections
    cache = projections._graphs
    held = projections.memory("mei")
    projections.memory("ada")  # the newest: Mei's graph is the one the bound evicts
    assert held.deferred is not None
    cache._max_bytes = projections.graph_bytes  # the history built is over the bound
    holding, dropping = threading.Event(), threading.Event()
    tell = cache._dropped

    def told(user_id: str) -> None:
        dropping.set()  # the projections' lock, held by the other reader, is next
        tell(user_id)

    cache._dropped = told

    def read_holding_the_lock() -> None:
        with projections._lock:
            holding.set()
            dropping.wait(timeout=10)
            cache.resident("ada")  # the cache's lock

    first = threading.Thread(target=read_holding_the_lock, daemon=True)
    first.start()
    assert holding.wait(timeout=30)
    # ``history`` without its lookup (which waits for the lock): the memory it reads
    second = threading.Thread(target=held.history, args=("child.age", "health"), daemon=True)
    second.start()
    first.join(timeout=20)
    second.join(timeout=20)
    assert not first.is_alive() and not second.is_alive()
    assert dropping.is_set() and held.deferred is None
    assert "mei" not in cache and engine.history("mei", "child.age")
    engine.close()


def test_a_fact_read_while_another_read_builds_the_history_is_found(tmp_path: Path) -> None:
    """``fact`` misses a deferred fact among the built ones, then finds it in the history;
    another reader may build the history in between, and the fact is then found there."""
    path, _ = _store(tmp_path)
    looked, built = threading.Event(), threading.Event()
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        memory = engine.memory("mei")
        assert memory.deferred is not None
        quiet = next(i for i in memory.deferred.order if i not in memory._facts)

        class _Pausing(dict[str, Any]):
            """The built facts, pausing the slow reader right after it looked ``quiet`` up."""

            def get(self, key: str, default: Any = None) -> Any:
                found = dict.get(self, key, default)
                if key == quiet and threading.current_thread() is slow:
                    looked.set()
                    built.wait(timeout=30)
                return found

        memory._facts = _Pausing(memory._facts)
        found: list[Any] = []
        slow = threading.Thread(target=lambda: found.append(engine.fact("mei", quiet).status))
        slow.start()
        assert looked.wait(timeout=30)
        engine.history("mei", "child.age")  # builds the history meanwhile
        built.set()
        slow.join()
        assert found == [FactStatus.SUPERSEDED]
