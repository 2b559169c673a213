"""Faults the OS gives: a full disk, I/O errors, a locked and a read-only database.

Each write fails with a ``store.*`` error that names the cause, nothing half-written is visible
afterwards, reads keep working, and writes succeed again once the fault is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, MemkgError, SqliteDecisionLog, StoreError
from memkg.access.keyring import Keyring
from memkg.access.sqlite import SqliteAccessStore
from memkg.events.sqlite import SqliteEventStore
from support import workload
from support.crash import TESTS, store_problems, stored_once
from support.figures import record

INGESTS = {"ingest": 3, "decide": 1, "note": 1}


def _seed(db: Path, count: int = 12) -> list[str]:
    """A store with a few users' facts, notes and decisions; the ingests' source refs."""
    clock = FrozenClock(workload.T0)
    acked = []
    with Engine.open(db, clock=clock) as engine:
        for op in workload.plan(5, count, weights=INGESTS):
            try:
                workload.run(engine, clock, op)
            except MemkgError:
                continue
            if op.kind == "ingest":
                acked.append(f"op-{op.index}")
    return acked


def _verify(db: Path, acked: list[str]) -> None:
    with Engine.open(db, clock=FrozenClock(workload.T0)) as engine:
        events = list(engine.store.read_all())
        assert store_problems(engine, events, db) == []
        assert stored_once(events, acked) == []
        for user in engine.store.users():
            for decision in engine.decisions(user):
                assert engine.replay(decision.decision_id).reproduced


def _child(mode: str, db: Path, **env_extra: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(TESTS), **env_extra}
    done = subprocess.run(
        [sys.executable, "-m", "support.fault_child", mode, str(db)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_io_errors_fail_cleanly_and_the_retry_lands_once(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    acked = _seed(db)
    result = _child("fsize", db)
    codes = result["codes"]
    assert isinstance(codes, list) and codes and set(codes) == {"store.io"}, result
    assert "disk I/O error" in str(result["message"]) and "check it, then retry" in str(
        result["message"]
    )
    assert result["head_unchanged"] and result["reads"]
    assert isinstance(result["acked"], list)
    _verify(db, acked + result["acked"])
    record("faults[io]: RLIMIT_FSIZE write failures", faults=len(codes))


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, check=False)  # fmt: skip
    return done.returncode == 0


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 384 KiB tmpfs (needs root and mount rights; skipped where the test may not mount)."""
    where = Path(tempfile.mkdtemp(prefix="memkg-full-"))
    if not _mount_tmpfs(where, "384k"):
        where.rmdir()
        pytest.skip("cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)
        where.rmdir()


def test_a_full_disk_fails_writes_keeps_reads_and_recovers(small_disk: Path) -> None:
    db = small_disk / "memkg.db"
    clock = FrozenClock(workload.T0)
    acked: list[str] = []
    codes: list[str] = []
    with Engine.open(db, clock=clock) as engine:
        failed = None
        for op in workload.plan(9, 3000, weights=INGESTS):
            head = engine.store.head()
            try:
                workload.run(engine, clock, op)
            except StoreError as exc:
                codes.append(exc.code)
                assert engine.store.head() == head  # nothing of the failed write is visible
                if op.kind == "ingest":
                    failed = op
                    break
                continue
            except MemkgError:
                continue
            if op.kind == "ingest":
                acked.append(f"op-{op.index}")
        assert failed is not None and codes and set(codes) == {"store.full"}
        users = engine.store.users()
        held = {u: engine.facts(u) for u in users}  # reads keep working
        assert held and all(engine.notes(u) is not None for u in users)
        subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
        workload.run(engine, clock, failed)  # space returned: the retry is stored, once
        acked.append(f"op-{failed.index}")
        engine.decide(failed.user, "travel", {})
    _verify(db, acked)
    record("faults[full]: writes refused on a full tmpfs", faults=len(codes))


def test_a_locked_database_fails_writes_keeps_reads_and_recovers(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    acked = _seed(db)
    clock = FrozenClock(workload.T0)
    store = SqliteEventStore(db, busy_timeout=0.05)
    engine = Engine(store, clock=clock, decision_log=SqliteDecisionLog(db, busy_timeout=0.05))
    user = store.users()[0]
    before = engine.facts(user)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    op = workload.plan(11, 1, weights={"ingest": 1}, first=10_000)[0]
    observation = {**op.args["observation"], "user_id": user}
    codes = []
    for attempt in (lambda: engine.ingest(observation), lambda: engine.decide(user, "travel")):
        with pytest.raises(StoreError) as failed:
            attempt()
        codes.append(failed.value.code)
        assert "write lock" in failed.value.message
    assert codes == ["store.locked", "store.locked"]
    assert engine.facts(user) == before  # reads go on while another process writes
    holder.execute("ROLLBACK")
    holder.close()
    engine.ingest(observation)
    engine.decide(user, "travel")
    engine.close()
    _verify(db, [*acked, "op-10000"])
    record("faults[locked]: writes refused behind a lock", faults=len(codes))


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory anyone may enter and write (the store's own file will be read-only)."""
    where = Path(tempfile.mkdtemp(prefix="memkg-ro-"))
    where.chmod(0o1777)
    try:
        yield where
    finally:
        shutil.rmtree(where)


def test_a_read_only_database_serves_reads_and_refuses_writes(shared_dir: Path) -> None:
    db = shared_dir / "memkg.db"
    acked = _seed(db, 20)
    db.chmod(0o444)  # root ignores this: the child drops to nobody first
    result = _child("read_only", db)
    assert result["codes"] == ["store.read_only"] * 3, result
    assert "read-only; reads still work" in str(result["message"])
    assert result["facts"] and result["facts"] == result["facts_after"]
    assert result["head"] == result["head_after"]
    db.chmod(0o644)
    for leftover in shared_dir.glob("memkg.db-*"):
        leftover.unlink()  # the child's -wal/-shm belong to nobody
    _verify(db, acked)
    record("faults[read-only]: writes refused on a read-only file", faults=3)


def test_a_store_in_a_read_only_folder_says_so(shared_dir: Path) -> None:
    db = shared_dir / "memkg.db"
    _seed(db, 5)
    for leftover in shared_dir.glob("memkg.db-*"):  # closed cleanly: SQLite must make -shm again
        leftover.unlink()
    db.chmod(0o444)
    shared_dir.chmod(0o555)
    try:
        result = _child("read_only_folder", db)
    finally:
        shared_dir.chmod(0o1777)
        db.chmod(0o644)
    assert result["code"] == "store.read_only", result
    assert "folder" in str(result["message"]) and "memkg.db-shm" in str(result["message"])


def test_the_keys_of_a_read_only_file_list_and_serving_it_is_refused(shared_dir: Path) -> None:
    db = shared_dir / "memkg.db"
    _seed(db, 5)
    store = SqliteAccessStore(db)
    token = Keyring(store, FrozenClock(workload.T0)).create("agent", ["read"], ["travel"]).token
    store.close()
    for leftover in shared_dir.glob("memkg.db-*"):
        leftover.unlink()
    db.chmod(0o444)  # the folder stays writable: SQLite makes its -shm there
    try:
        result = _child("read_only_keys", db, MEMKG_TEST_TOKEN=token)
    finally:
        db.chmod(0o644)
        for leftover in shared_dir.glob("memkg.db-*"):
            leftover.unlink()  # the child's -wal/-shm belong to nobody
    code, listed = result["list"]  # type: ignore[misc]
    assert code == 0 and [k["name"] for k in listed["keys"]] == ["agent"], result
    for refused in ("create", "serve", "mcp"):
        code, error = result[refused]  # type: ignore[misc]
        assert code == 1 and error["error"] == "store.read_only", (refused, result)
    assert "access audit" in result["serve"][1]["message"]  # type: ignore[index]
