"""Snapshots: a user written past ``LONGEST_UNKEPT`` events has one kept in the SQLite store; a
fresh engine loads the user from it and the rows after it, and reads, decides and explains exactly
as folding the whole stream does. Erasure and purges leave no snapshot holding the user's
data; a snapshot that does not check, of another format, or older than a purge is not read.

What runs is counted, not timed: the rows folded and the snapshots restored.
"""

from __future__ import annotations

import gc
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.engine import snapshots
from memkg.engine.snapshots import EVERY, FORMAT, LONGEST_UNKEPT, LONGEST_UNKEPT_LOADED, Snapshots
from memkg.errors import StoreError
from memkg.events import sqlite as sqlite_store
from memkg.events.memory import MemoryEventStore
from memkg.events.snapshot import memory_state, restore_memory
from memkg.events.sqlite import SqliteEventStore
from memkg.graph.projection import UserGraph
from memkg.model.event import EventType, NewEvent

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
NIGHT = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)
CONFIG = EngineConfig(shacl=False)
FEVER = {"symptom": "fever"}
SECRET = "airline:Secretair-9431"


def _history(engine: Engine, restated: int) -> None:
    """Mei's memory: many restatements, a change, a retraction, a signal, a frozen key."""
    say = {"user_id": "mei", "source": "profile", "provenance": CONSENT}
    engine.ingest({**say, "domain": "health", "key": "medical.conditions",
                   "value": ["condition:asthma"]})  # fmt: skip
    for n in range(restated):
        engine.ingest({**say, "domain": "health", "key": "child.age", "value": 3 + n % 2,
                       "confidence": 0.5 + (n % 5) / 10})  # fmt: skip
    audited = {**CONSENT, "audit_log_id": "aud-1"}
    engine.ingest({**say, "domain": "travel", "key": "airline.preferred", "value": SECRET,
                   "source": "dialogue", "provenance": audited})  # fmt: skip
    engine.signal("mei", "travel", "airline.preferred", SECRET, "mention")
    seat = engine.ingest({**say, "domain": "travel", "key": "seat.preference",
                          "value": "window", "source": "dialogue"})  # fmt: skip
    engine.retract("mei", seat.fact_id, "said by mistake")
    for allergies, source in ((["allergen:peanut"], "profile"), ([], "system")):  # frozen
        engine.ingest({**say, "domain": "health", "key": "medical.allergies", "value": allergies,
                       "source": source})  # fmt: skip


def _store(tmp_path: Path, restated: int = LONGEST_UNKEPT // 2 + EVERY) -> Path:
    path = tmp_path / "m.db"
    with Engine.open(path, clock=FrozenClock(NIGHT - timedelta(hours=1)), config=CONFIG) as eng:
        _history(eng, restated)
    return path


def _kept(path: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT user_id, version, seq, format FROM snapshots").fetchall()
    finally:
        db.close()


def _change(path: Path, statement: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute(statement)
    finally:
        db.close()


class _Counted:
    """Counts the snapshots restored and the rows folded by ``UserGraph.fold_rows``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.restored = self.rows = 0
        restore, fold_rows = Snapshots.restore, UserGraph.fold_rows

        def counted_restore(this: Snapshots, user_id: str, graph: UserGraph) -> Any:
            found = restore(this, user_id, graph)
            self.restored += found is not None
            return found

        def counted_fold(this: UserGraph, rows: Any, row_event: Any) -> None:
            rows = list(rows)
            self.rows += len(rows)
            fold_rows(this, rows, row_event)

        monkeypatch.setattr(Snapshots, "restore", counted_restore)
        monkeypatch.setattr(UserGraph, "fold_rows", counted_fold)


def _everything(path: Path, name: str) -> list[Any]:
    """What a fresh engine reads, decides and explains for Mei, not resident, on a copy of the
    store at ``path`` (each decision is logged)."""
    copy = path.with_name(name)
    shutil.copy(path, copy)
    with Engine.open(copy, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        decision = engine.decide("mei", "health", FEVER)
        memory = engine.memory("mei")
        return [
            decision.model_dump(exclude={"timings"}),
            engine.explain(decision.decision_id),
            [
                (f.model_dump(), f.model_fields_set, f.provenance.model_fields_set)
                for f in memory.facts.values()
            ],
            engine.history("mei", "child.age"),
            engine.edges("mei", "travel"),
            engine.graph("mei", "travel", fmt="turtle"),
            engine.projections.reviews("mei"),
            engine.replay(decision.decision_id).reproduced,
        ]


def test_a_long_stream_loads_from_a_snapshot_and_the_rows_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path)
    kept = _kept(path)
    assert [(user, fmt) for user, _, _, fmt in kept] == [("mei", FORMAT)]
    store = SqliteEventStore(path)
    events = len(store.read_stream("mei"))
    store.close()
    assert events > LONGEST_UNKEPT + EVERY
    counted = _Counted(monkeypatch)
    from_snapshot = _everything(path, "a.db")
    assert counted.restored == 1
    assert 0 < counted.rows < events - kept[0][1] + 1  # the rows after the snapshot
    with monkeypatch.context() as patch:  # the same store, its snapshots not read
        patch.setattr(snapshots, "FORMAT", "another format")
        from_rows = _everything(path, "b.db")
    assert from_snapshot == from_rows
    assert from_snapshot[-1] is True


def test_the_collector_resumes_after_a_restore_with_none_of_the_decoded_state_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the decoded body (a list per fact) dies before the collector resumes: the young objects
    # it then scans are the memory's own (its facts and their fields), not a second copy
    path = _store(tmp_path)
    young_lists: list[int] = []
    collector_paused = snapshots.collector_paused

    @contextmanager
    def paused() -> Iterator[None]:
        with collector_paused():
            try:
                yield
            finally:  # the young lists, counted before the collector resumes
                young_lists.append(sum(type(o) is list for o in gc.get_objects(0)))

    monkeypatch.setattr(snapshots, "collector_paused", paused)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        gc.collect()
        facts = len(engine.memory("mei").facts)
    assert facts > LONGEST_UNKEPT // 2
    assert len(young_lists) == 1  # the one restore
    assert young_lists[0] < facts // 3, young_lists  # a list per fact before


def test_a_snapshot_keeps_what_each_fact_set_and_each_time_in_its_own_zone(
    tmp_path: Path,
) -> None:
    """A fact stored with an empty provenance keeps it empty (no field set), not filled in;
    times of one instant in two zones stay in theirs."""
    store = SqliteEventStore(tmp_path / "m.db")
    for n, observed in enumerate((NIGHT.isoformat(), "2026-05-01T22:15:00+08:00")):
        fact = {"id": f"fact_{n}", "user_id": "mei", "domain": "travel",
                "key": "seat.preference", "value": "window", "kind": "preference",
                "source": "profile", "confidence": 1, "scope": "global",
                "observed_at": observed, "recorded_at": NIGHT.isoformat(), "provenance": {},
                "sensitivity": "public", "status": "active", "schema_version": 1}  # fmt: skip
        store.append("mei", [NewEvent(event_id=f"evt_{n}", type=EventType.FACT_ASSERTED,
                                      user_id="mei", domain="travel", payload={"fact": fact},
                                      recorded_at=NIGHT, fact_id=f"fact_{n}")])  # fmt: skip
    with Engine(store, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        folded = engine.memory("mei")
        restored = engine.setup.new_graph("mei").memory
        restore_memory(restored, *snapshots.decode(snapshots.encode(*memory_state(folded))))
        pairs = list(zip(folded.facts.values(), restored.facts.values(), strict=True))
        assert len(pairs) == 2
        for before, after in pairs:
            assert after.__dict__ == before.__dict__
            assert after.model_fields_set == before.model_fields_set
            assert after.provenance.model_fields_set == before.provenance.model_fields_set
            assert after.observed_at.isoformat() == before.observed_at.isoformat()
        assert pairs[0][1].provenance.model_fields_set == set()
        assert pairs[1][1].observed_at.isoformat().endswith("+08:00")


def test_erasure_leaves_no_snapshot_and_no_byte_of_it(tmp_path: Path) -> None:
    path = _store(tmp_path)
    assert _kept(path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        engine.decide("mei", "health", FEVER)
        engine.erase("mei")
    assert _kept(path) == []
    files = [p for p in tmp_path.iterdir() if p.name.startswith("m.db")]
    held = b"".join(p.read_bytes() for p in files)
    assert SECRET.encode() not in held and b"mei" not in held


def test_a_purge_by_audit_id_drops_the_users_snapshot_and_retires_the_others(
    tmp_path: Path,
) -> None:
    path = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        for n in range(LONGEST_UNKEPT // 2 + EVERY):  # Li gets one too
            age = {"domain": "health", "key": "child.age", "value": 2 + n % 2}
            engine.ingest({"user_id": "li", **age, "source": "profile", "provenance": CONSENT})
    assert sorted(user for user, *_ in _kept(path)) == ["li", "mei"]
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        engine.erase_audit_id("aud-1")
        assert SECRET not in str(engine.facts("mei"))
        store = engine.store
        assert isinstance(store, SqliteEventStore)
        assert store.read_snapshot("li", FORMAT) is None  # written before the purge
    assert [user for user, *_ in _kept(path)] == ["li"]
    held = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("m.db"))
    assert SECRET.encode() not in held


def test_a_snapshot_that_does_not_check_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _store(tmp_path)
    whole = _everything(path, "a.db")
    _change(
        path,
        "UPDATE snapshots SET body = CAST(substr(body, 1, 40) || x'20'"
        " || substr(body, 42) AS BLOB)",
    )  # one byte of the body changed
    counted = _Counted(monkeypatch)
    assert _everything(path, "b.db") == whole
    assert counted.restored == 0


def test_a_snapshot_is_kept_only_at_an_event_the_stream_holds(tmp_path: Path) -> None:
    path = _store(tmp_path)
    (user, version, seq, _), = _kept(path)  # fmt: skip
    store = SqliteEventStore(path)
    assert store.read_snapshot(user, FORMAT) is not None
    assert store.read_snapshot(user, "another format") is None
    assert not store.write_snapshot(user, version, seq + 1, 0, FORMAT, b"{}")
    assert not store.write_snapshot(user, version, seq, 7, FORMAT, b"{}")  # purges differ
    assert store.read_snapshot(user, FORMAT) is not None
    store.close()


def test_stores_without_snapshots_fold_the_log() -> None:
    assert Snapshots.of(MemoryEventStore(), ("key.frozen",)) is None
    with Engine(clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        _history(engine, EVERY)
        decided = engine.decide("mei", "health", FEVER)
        engine.projections.forget("mei")
        again = engine.decide("mei", "health", FEVER)
        assert again.result == decided.result


def test_a_snapshot_stored_as_text_is_not_read(tmp_path: Path) -> None:
    path = _store(tmp_path)
    _change(path, "UPDATE snapshots SET body = CAST(body AS TEXT)")
    store = SqliteEventStore(path)
    assert store.read_snapshot("mei", FORMAT) is None
    store.close()


def test_a_file_that_holds_snapshots_is_refused_by_a_release_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older release would erase a user and leave their snapshot: it may not open the file."""
    path = _store(tmp_path)
    db = sqlite3.connect(path)
    (version,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    db.close()
    assert int(version) == sqlite_store.SCHEMA_VERSION >= 2
    monkeypatch.setattr(sqlite_store, "SCHEMA_VERSION", 1)
    with pytest.raises(StoreError, match="upgrade memkg"):
        SqliteEventStore(path)


def test_a_short_stream_is_not_kept(tmp_path: Path) -> None:
    """Its rows fold about as fast as a snapshot reads: keeping one would only cost writes."""
    path = _store(tmp_path, restated=LONGEST_UNKEPT // 4)
    assert _kept(path) == []


def test_a_user_loaded_from_a_long_tail_is_kept_at_the_next_write_not_at_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user who writes once per load (many users, few resident) would otherwise never get a
    snapshot: the rows the load folded count towards the next one."""
    path = _store(tmp_path)
    _change(path, "DELETE FROM snapshots")
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        engine.memory("mei")
        engine.edges("mei", "travel")
    assert _kept(path) == []  # reads keep none
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        engine.ingest({"user_id": "mei", "domain": "health", "key": "child.age", "value": 4,
                       "source": "profile", "provenance": CONSENT})  # fmt: skip
    store = SqliteEventStore(path)
    events = len(store.read_stream("mei"))
    store.close()
    assert [(user, version) for user, version, _, _ in _kept(path)] == [("mei", events)]
    counted = _Counted(monkeypatch)
    _everything(path, "a.db")
    assert (counted.restored, counted.rows) == (1, 0)


def test_a_short_tail_after_a_snapshot_is_not_kept_again_at_the_next_write(tmp_path: Path) -> None:
    path = _store(tmp_path)
    (_, kept_at, _, _), = _kept(path)  # fmt: skip
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        engine.ingest({"user_id": "mei", "domain": "health", "key": "child.age", "value": 4,
                       "source": "profile", "provenance": CONSENT})  # fmt: skip
        version = engine.store.stream_version("mei")
    assert version - kept_at < EVERY
    assert [version for _, version, _, _ in _kept(path)] == [kept_at]


def test_a_snapshot_kept_on_request_is_read_whatever_the_streams_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a store filled by direct appends asks for: each user kept at once."""
    path = _store(tmp_path, restated=LONGEST_UNKEPT // 4)
    assert _kept(path) == []
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        assert engine.projections.keep_snapshot("mei")
    assert [user for user, *_ in _kept(path)] == ["mei"]
    counted = _Counted(monkeypatch)
    from_snapshot = _everything(path, "a.db")
    assert (counted.restored, counted.rows) == (1, 0)
    with monkeypatch.context() as patch:
        patch.setattr(snapshots, "FORMAT", "another format")
        assert _everything(path, "b.db") == from_snapshot
    with Engine(clock=FrozenClock(NIGHT), config=CONFIG) as engine:  # keeps none
        _history(engine, 2)
        assert not engine.projections.keep_snapshot("mei")


def test_a_shorter_stream_is_kept_at_the_write_after_a_load_that_folded_it(tmp_path: Path) -> None:
    """Writes of one residency keep none below ``LONGEST_UNKEPT``; a load that folds the rows
    of a stream past ``LONGEST_UNKEPT_LOADED`` keeps one at its next write."""
    path = _store(tmp_path, restated=LONGEST_UNKEPT_LOADED)
    store = SqliteEventStore(path)
    events = len(store.read_stream("mei"))
    store.close()
    assert LONGEST_UNKEPT_LOADED < events < LONGEST_UNKEPT
    assert _kept(path) == []
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        engine.ingest({"user_id": "mei", "domain": "health", "key": "child.age", "value": 4,
                       "source": "profile", "provenance": CONSENT})  # fmt: skip
        version = engine.store.stream_version("mei")
    assert [(user, kept) for user, kept, _, _ in _kept(path)] == [("mei", version)]
