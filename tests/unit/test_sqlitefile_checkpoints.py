"""WAL checkpoints run on the file's own thread, not on the commit that crosses 1,000 pages."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from memkg import sqlitefile
from memkg.decisions import SqliteDecisionLog
from memkg.events.sqlite import SqliteEventStore
from memkg.model.event import EventType, NewEvent
from memkg.trace.sqlite import SqliteTraceStore

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)
PAGE = 4096


def _events(count: int, size: int, start: int = 0) -> list[NewEvent]:
    return [
        NewEvent(
            event_id=f"evt_{start + n}",
            type=EventType.NOTE_SAVED,
            user_id="u",
            domain=None,
            payload={"text": "x" * size},
            recorded_at=NOW,
        )
        for n in range(count)
    ]


def _threads(path: Path) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"memkg-checkpoint {path.name}"]


def _wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_commits_leave_the_checkpoint_to_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "memkg.db"
    store = SqliteEventStore(path)
    wal = Path(f"{path}-wal")
    try:
        checkpointer = sqlitefile.checkpointer_of(path)
        assert checkpointer is not None
        with checkpointer.paused():  # what the writers' commits do on their own
            for n in range(30):  # 30 commits of ~200 kB: about 1,500 pages of WAL
                store.append("u", _events(10, 20_000, start=n * 10))
            # no commit checkpointed (SQLite's own would have at 1,000 pages, and the WAL
            # would restart from its beginning instead of growing)
            assert wal.stat().st_size > 1_400 * PAGE
            runs, before = checkpointer.runs, path.stat().st_size
        _wait_for(lambda: checkpointer.runs > runs, "the thread never checkpointed")
        assert path.stat().st_size > before + 1_000 * PAGE  # the pages reached the database
        assert checkpointer.cpu_seconds > 0
        assert len(store.read_stream("u")) == 300
    finally:
        store.close()


def test_the_writers_of_one_file_share_a_thread_that_ends_with_the_last(tmp_path: Path) -> None:
    path = tmp_path / "memkg.db"
    store = SqliteEventStore(path)
    decisions, traces = SqliteDecisionLog(path), SqliteTraceStore(path)
    other = SqliteEventStore(tmp_path / "other.db")
    try:
        assert len(_threads(path)) == 1 and len(_threads(tmp_path / "other.db")) == 1
        for writer in (store, decisions, traces):
            assert writer._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == (
                sqlitefile.BACKSTOP_PAGES
            )
        store.close()
        decisions.close()
        assert len(_threads(path)) == 1  # the trace store still writes
        traces.close()
        assert _threads(path) == [] and sqlitefile.checkpointer_of(path) is None
        assert len(_threads(tmp_path / "other.db")) == 1
    finally:
        for writer in (store, decisions, traces, other):
            writer.close()
    assert _threads(tmp_path / "other.db") == []
    reopened = SqliteEventStore(path)  # a new writer starts a new thread
    try:
        reopened.append("u", _events(60, 20_000, start=1_000))
        checkpointer = sqlitefile.checkpointer_of(path)
        assert checkpointer is not None
        _wait_for(lambda: checkpointer.runs > 0, "the new thread never checkpointed")
    finally:
        reopened.close()


def test_a_checkpoint_runs_once_per_megabyte_of_rows_not_per_commit(tmp_path: Path) -> None:
    path = tmp_path / "memkg.db"
    store = SqliteEventStore(path)
    try:
        checkpointer = sqlitefile.checkpointer_of(path)
        assert checkpointer is not None
        for n in range(100):  # 100 commits, about 100 kB of payloads: none due
            store.append("u", _events(1, 1_000, start=n))
        time.sleep(3 * sqlitefile.PAUSE)
        assert checkpointer.runs == 0
        for n in range(40):  # 40 commits, about 4 MB: a few checkpoints, not 40
            store.append("u", _events(1, 100_000, start=100 + n))
        _wait_for(lambda: checkpointer.runs > 0, "the thread never checkpointed")
        assert checkpointer.runs <= 4_100_000 // sqlitefile.EVERY_BYTES
    finally:
        store.close()


def test_a_file_not_in_wal_mode_gets_no_thread(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    traces = SqliteTraceStore(path)  # the trace store leaves the journal mode as it finds it
    try:
        assert traces._checkpoints is None and _threads(path) == []
        assert sqlitefile.checkpointer_of(path) is None
    finally:
        traces.close()
