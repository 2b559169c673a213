"""What the SQLite store promises beyond the contract: durability, races, no bytes left."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from memkg.errors import ConcurrencyConflict, StoreError
from memkg.events.sqlite import SqliteEventStore

MakeEvent = Any
SECRET_VALUE = "Zanzibar-Quokka-7731"
OTHER_VALUE = "Patagonia-Wombat-4410"
ERASED_USER = "user-Erasable-5150"


def test_durability_settings(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "events.db")
    db = store._db

    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert db.execute("PRAGMA secure_delete").fetchone()[0] == 1
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    assert meta["schema_version"] == "3"  # snapshots kept, idempotency keys scoped
    store.close()


def test_reopening_keeps_events_and_the_erasure_key(tmp_path: Path, make_event: MakeEvent) -> None:
    path = tmp_path / "events.db"
    store = SqliteEventStore(path)
    stored = store.append("alice", [make_event()]).events
    store.erase_subject("bob", erasure_id="era_1", at_iso="2026-01-01T00:00:00Z")
    store.close()

    again = SqliteEventStore(path)

    assert again.read_stream("alice") == list(stored)
    assert again.was_erased("bob")
    again.close()


def test_refuses_a_file_from_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    SqliteEventStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.close()

    with pytest.raises(StoreError, match="newer"):
        SqliteEventStore(path)


def test_racing_writers_on_one_file_never_lose_an_update(
    tmp_path: Path, make_event: MakeEvent
) -> None:
    path = tmp_path / "events.db"
    shared, other = SqliteEventStore(path), SqliteEventStore(path)
    writers = [shared, shared, other, SqliteEventStore(path)]
    rounds = 25
    barrier = threading.Barrier(len(writers))
    events = [[make_event() for _ in range(rounds)] for _ in writers]
    outcomes: list[list[str]] = [[] for _ in writers]

    def race(i: int) -> None:
        for r in range(rounds):
            barrier.wait()
            try:
                writers[i].append("alice", [events[i][r]], expected_version=r)
                outcomes[i].append("won")
            except ConcurrencyConflict as conflict:
                outcomes[i].append(f"lost {conflict.expected}->{conflict.actual}")
            barrier.wait()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(writers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    for r in range(rounds):
        assert sorted(o[r] for o in outcomes) == [f"lost {r}->{r + 1}"] * 3 + ["won"]
    stream = shared.read_stream("alice")
    assert [e.version for e in stream] == list(range(1, rounds + 1))
    for store in {id(w): w for w in writers}.values():
        store.close()


def _bytes(store: SqliteEventStore) -> bytes:
    files = store.files()
    assert files[0] == store.path
    return b"".join(f.read_bytes() for f in files)


def test_erasure_leaves_no_byte_of_the_user(tmp_path: Path, make_event: MakeEvent) -> None:
    store = SqliteEventStore(tmp_path / "events.db")
    for _ in range(50):
        store.append(ERASED_USER, [make_event(ERASED_USER, value=SECRET_VALUE)])
    store.append(ERASED_USER, [make_event(ERASED_USER)], idempotency_key="idem-Erasable-77")
    store.append("bob", [make_event("bob", value=OTHER_VALUE)])
    store.subject_salt(ERASED_USER)
    bystander = SqliteEventStore(store.path)  # another connection on the file, between reads
    assert len(bystander.read_stream(ERASED_USER)) == 51
    before = _bytes(store)
    assert SECRET_VALUE.encode() in before and ERASED_USER.encode() in before

    store.erase_subject(ERASED_USER, erasure_id="era_1", at_iso="2026-01-01T00:00:00Z")

    after = _bytes(store)
    for secret in (ERASED_USER, SECRET_VALUE, "idem-Erasable-77"):
        assert secret.encode() not in after, secret
    assert OTHER_VALUE.encode() in after
    assert {p.name for p in store.files()} <= {"events.db", "events.db-wal", "events.db-shm"}
    tombstone = store._db.execute("SELECT * FROM erasures").fetchone()
    assert ERASED_USER not in repr(tombstone)
    assert tombstone[0] == "era_1" and tombstone[3] == 51
    assert store.was_erased(ERASED_USER) and bystander.read_stream(ERASED_USER) == []
    bystander.close()
    store.close()


def test_purged_facts_leave_no_byte(tmp_path: Path, make_event: MakeEvent) -> None:
    store = SqliteEventStore(tmp_path / "events.db")
    store.append("alice", [make_event(value=SECRET_VALUE, fact_id="f-secret")])
    store.append("alice", [make_event(value=OTHER_VALUE, fact_id="f-kept")])

    store.purge_facts("alice", ["f-secret"])

    after = _bytes(store)
    assert SECRET_VALUE.encode() not in after and b"f-secret" not in after
    assert OTHER_VALUE.encode() in after
    store.close()


def test_erasure_is_refused_while_a_reader_pins_the_wal(
    tmp_path: Path, make_event: MakeEvent
) -> None:
    store = SqliteEventStore(tmp_path / "events.db", busy_timeout=0.2)
    store.append("alice", [make_event()])
    reader = sqlite3.connect(store.path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM events").fetchone()

    with pytest.raises(StoreError, match="retry"):
        store.erase_subject("alice", erasure_id="era_1", at_iso="2026-01-01T00:00:00Z")

    reader.execute("COMMIT")
    reader.close()
    assert store.read_stream("alice") == []
    store.erase_subject("alice", erasure_id="era_2", at_iso="2026-01-01T00:00:00Z")
    store.close()


def test_version_constraint_backs_up_the_stream_check(
    tmp_path: Path, make_event: MakeEvent
) -> None:
    store = SqliteEventStore(tmp_path / "events.db")
    store.append("alice", [make_event()])
    store._db.execute("DELETE FROM streams")  # a writer that forgot to record the version

    with pytest.raises(ConcurrencyConflict) as caught:
        store.append("alice", [make_event()], expected_version=0)

    assert (caught.value.expected, caught.value.actual) == (0, 1)
    assert len(store.read_stream("alice")) == 1
    store.close()


def test_an_append_in_a_batch_is_one_statement(tmp_path: Path, make_event: MakeEvent) -> None:
    """Inside a batch, an append without an idempotency key is one ``INSERT`` (atomic on its
    own, so no savepoint); each stream's version is read once and written once, at commit."""
    store = SqliteEventStore(tmp_path / "events.db")
    store.append("carol", [make_event("carol")])
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    with store.batch():
        for n in range(12):
            user = ("alice", "bob", "carol")[n % 3]
            store.append(user, [make_event(user) for _ in range(1 + n % 2)])
    store._db.set_trace_callback(None)

    kinds = [s.split(" (")[0].split(" VALUES")[0] for s in statements]
    assert kinds.count("INSERT INTO events") == 12
    assert kinds.count("INSERT OR REPLACE INTO streams") == 3
    assert sum(s.startswith("SELECT") for s in statements) == 3
    assert not any(s.startswith(("SAVEPOINT", "RELEASE")) for s in statements)
    assert len(statements) == 12 + 3 + 3 + 2  # and BEGIN, COMMIT
    assert store.stream_version("carol") == 7 and len(store.read_stream("alice")) == 6
    store.close()


def test_a_failed_append_in_a_batch_stores_nothing_of_it(
    tmp_path: Path, make_event: MakeEvent
) -> None:
    store = SqliteEventStore(tmp_path / "events.db")
    taken = make_event("bob")
    with store.batch():
        store.append("alice", [make_event(), make_event()], expected_version=0)
        store.append("bob", [taken])
        with pytest.raises(StoreError):  # the second event's id is taken: the first goes too
            store.append("alice", [make_event(), taken.model_copy(update={"user_id": "alice"})])
        store.append("alice", [make_event()], expected_version=2)
    assert [e.version for e in store.read_stream("alice")] == [1, 2, 3]
    assert store.head() == 4
    store.close()
