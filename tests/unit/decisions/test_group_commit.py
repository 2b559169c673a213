"""Concurrent decision appends share commits, and each returns only once its row is durable."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.decisions import SqliteDecisionLog
from memkg.errors import InvalidOperation, StoreError
from memkg.model.decision import Decision

from .conftest import NOW


def _decisions(tmp_path: Path, count: int) -> list[Decision]:
    engine = Engine(clock=FrozenClock(NOW), config=EngineConfig(shacl=False))
    made = [engine.decide(f"u{n}", "finance", {"product_type": "bonds", "amount": n + 1})
            for n in range(count)]  # fmt: skip
    engine.close()
    return made


def _committed(path: Path, decision_id: str) -> bool:
    """Whether another connection (another process, after a crash) sees the row."""
    with sqlite3.connect(path) as other:
        found = other.execute("SELECT 1 FROM decisions WHERE decision_id = ?", (decision_id,))
        return found.fetchone() is not None


def _wait_for(condition: object, what: str) -> None:
    for _ in range(2_000):  # a bound on polls, not a timing assertion
        if callable(condition) and condition():
            return
        time.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


def test_appends_queued_behind_a_commit_share_the_next_one(tmp_path: Path) -> None:
    decisions = _decisions(tmp_path, 9)
    log = SqliteDecisionLog(tmp_path / "d.db")
    log.append(decisions[0])
    assert log.commits == 1
    acknowledged: list[tuple[str, bool]] = []
    failures: list[BaseException] = []

    def append(decision: Decision) -> None:
        try:
            log.append(decision)
            acknowledged.append((decision.decision_id, _committed(log.path, decision.decision_id)))
        except BaseException as exc:  # reported below
            failures.append(exc)

    # hold the connection as a commit in progress would, so the next appends queue up
    with log._lock:
        threads = [threading.Thread(target=append, args=(d,)) for d in decisions[1:]]
        for thread in threads:
            thread.start()
        _wait_for(lambda: len(log._pending) == 8, "eight appends queued")
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(acknowledged) == sorted((d.decision_id, True) for d in decisions[1:])
    assert log.commits == 2  # eight appends, one commit
    assert [d.decision_id for d in log.for_user("u3")] == [decisions[3].decision_id]
    log.close()


def test_a_duplicate_in_a_group_fails_alone(tmp_path: Path) -> None:
    first, second = _decisions(tmp_path, 2)
    log = SqliteDecisionLog(tmp_path / "d.db")
    log.append(first)
    outcomes: dict[str, BaseException | None] = {}

    def append(name: str, decision: Decision) -> None:
        try:
            log.append(decision)
            outcomes[name] = None
        except BaseException as exc:  # checked below
            outcomes[name] = exc

    with log._lock:
        threads = [threading.Thread(target=append, args=(n, d))
                   for n, d in (("again", first), ("new", second))]  # fmt: skip
        for thread in threads:
            thread.start()
        _wait_for(lambda: len(log._pending) == 2, "two appends queued")
    for thread in threads:
        thread.join()
    assert isinstance(outcomes["again"], InvalidOperation)
    assert outcomes["again"].code == "decision.duplicate"
    assert outcomes["new"] is None
    assert log.get(second.decision_id) == second
    assert log.commits == 2
    log.close()


def test_a_failed_commit_fails_every_append_in_it(tmp_path: Path) -> None:
    (decision,) = _decisions(tmp_path, 1)
    log = SqliteDecisionLog(tmp_path / "d.db")
    other = sqlite3.connect(log.path, timeout=0, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the file
    log._db.execute("PRAGMA busy_timeout = 0")
    with pytest.raises(StoreError) as refused:
        log.append(decision)
    assert refused.value.code == "store.locked"
    other.execute("ROLLBACK")
    other.close()
    log.append(decision)  # nothing half-done: the same decision now commits
    assert log.get(decision.decision_id) == decision
    log.close()
