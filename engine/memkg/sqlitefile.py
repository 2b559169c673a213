"""What every SQLite file memkg writes does: checkpoint its WAL on a thread of its own, and
rewrite itself after an erasure deleted rows from it.

SQLite copies a WAL's pages back into the database (a checkpoint) on whichever commit finds
the WAL past ``wal_autocheckpoint`` pages: with the decision log's records that is one
decision or ingest in a few dozen, and it pays the copy and the syncs (5 to 10 ms of CPU, most
of a decision's p99). memkg's writers on one file share a ``Checkpointer`` instead: each
commit tells it how many bytes of rows it wrote, and once ``EVERY_BYTES`` have been written
since the last checkpoint its thread runs a ``PASSIVE`` one (which waits for no reader or
writer), ``PAUSE`` after, so the copying overlaps the callers' work instead of landing on one
of them, about as often as SQLite's own would (each checkpoint syncs the database file: more
of them would cost more). A commit's durability does not change: it is synced to the WAL
before it returns, whatever the checkpoint does afterwards.

The writers keep SQLite's own checkpoint as a backstop at ``BACKSTOP_PAGES``, should the
thread fall behind (a reader pinning the WAL, a machine too busy to schedule it). Erasure's
compaction, whose ``TRUNCATE`` checkpoint must not meet this one, holds the file's
checkpointer (``paused``) while it runs.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from memkg.errors import StoreError, sqlite_failure

log = logging.getLogger(__name__)

EVERY_BYTES = 1 << 20
"""Bytes of rows written (payloads, records) between checkpoints: about the 1,000 pages of
WAL at which SQLite's own checkpoint would run, once the pages indexes and tables touch
are counted."""
PAUSE = 0.05
"""Seconds the thread waits, once a checkpoint is due, for the commit that made it due."""
BACKSTOP_PAGES = 16_384
"""``wal_autocheckpoint`` of the writers: SQLite's own checkpoint, past 64 MB of WAL only."""


class Checkpointer:
    """The checkpoint thread of one database file; see the module docstring."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs = 0
        """Checkpoints run so far."""
        self.cpu_seconds = 0.0
        """The thread's CPU time spent checkpointing (what the writers no longer pay inline)."""
        self._users = 0
        self._written = 0
        self._due = False
        self._wake = threading.Condition()
        self._running = threading.Lock()
        self._thread: threading.Thread | None = None

    def wrote(self, size: int) -> None:
        """A commit wrote about ``size`` bytes of rows: once ``EVERY_BYTES`` are written since
        the last checkpoint, checkpoint within ``PAUSE``."""
        with self._wake:
            self._written += size
            if self._written >= EVERY_BYTES and not self._due:
                self._due = True
                self._wake.notify()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No checkpoint of this thread runs inside the block."""
        with self._running:
            yield

    def _acquire(self) -> None:
        with self._wake:
            self._users += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"memkg-checkpoint {self.path.name}", daemon=True
                )
                self._thread.start()

    def _release(self) -> bool:
        """One writer fewer; when none is left, the thread ends (its connection closed before
        this returns). Whether it was the last."""
        with self._wake:
            self._users -= 1
            thread = self._thread if self._users == 0 else None
            if thread is not None:
                self._thread = None
                self._wake.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        return thread is not None

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:  # the writers' own backstop checkpoints instead
            log.warning("%s: no checkpoint thread (%s)", self.path, exc)
            return
        try:
            while self._next():
                with self._running:
                    start = time.thread_time()
                    try:
                        db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    except sqlite3.Error as exc:  # busy or failing: the next nudge retries
                        log.debug("%s: checkpoint skipped (%s)", self.path, exc)
                    self.cpu_seconds += time.thread_time() - start
                    self.runs += 1
        finally:
            db.close()

    def _next(self) -> bool:
        """Wait until a checkpoint is due, then ``PAUSE``; False once released."""
        with self._wake:
            while not self._due and self._users:
                self._wake.wait()
            if self._users:
                self._wake.wait(PAUSE)
            self._due, self._written = False, 0
            return self._users > 0


_FILES: dict[Path, Checkpointer] = {}
_FILES_LOCK = threading.Lock()


def attach(db: sqlite3.Connection, path: Path) -> Checkpointer | None:
    """The checkpointer of ``path``'s file, for a writer's connection ``db``: SQLite's own
    checkpoint on its commits becomes the backstop only. ``detach`` when the connection
    closes. ``None`` when the file is not in WAL mode (a read-only file may not be): there is
    nothing to checkpoint."""
    if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        return None
    db.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
    key = path.resolve()
    with _FILES_LOCK:
        checkpointer = _FILES.get(key)
        if checkpointer is None:
            checkpointer = _FILES[key] = Checkpointer(key)
        checkpointer._acquire()
    return checkpointer


def detach(checkpointer: Checkpointer | None) -> None:
    """A writer of the file closed (``attach`` gave it ``checkpointer``): the last one ends
    the thread."""
    if checkpointer is None:
        return
    with _FILES_LOCK:
        if checkpointer._release():
            _FILES.pop(checkpointer.path, None)


@contextlib.contextmanager
def paused(path: Path) -> Iterator[None]:
    """No background checkpoint of ``path``'s file runs inside the block."""
    with _FILES_LOCK:
        checkpointer = _FILES.get(path.resolve())
    if checkpointer is None:
        yield
        return
    with checkpointer.paused():
        yield


def checkpointer_of(path: Path) -> Checkpointer | None:
    """The file's checkpointer while a writer holds it (its counters, for benchmarks)."""
    with _FILES_LOCK:
        return _FILES.get(path.resolve())


_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"


def compact(db: sqlite3.Connection, path: Path, what: str, *, rewrite: bool = False) -> None:
    """Empty the file's WAL into it, so that deleted rows leave no bytes behind: every
    connection deletes with ``secure_delete=ON``, which overwrites a deleted row, and a page
    freed, with zeros, but the frames that held them linger in the WAL until it is
    checkpointed and truncated. ``rewrite``: then ``VACUUM`` too, which gives the freed pages
    back to the file system (it rewrites the whole file, so it costs what the file holds, and
    holds the write lock meanwhile). ``what`` names the rows (``decisions``, ``traces``...)
    in the error raised when a reader pins the WAL."""
    steps = (_TRUNCATE, "VACUUM", _TRUNCATE) if rewrite else (_TRUNCATE,)
    try:
        with paused(path):
            for step in steps:
                busy = db.execute(step).fetchone()
                if step.startswith("PRAGMA") and busy and busy[0]:
                    raise StoreError(
                        f"{path}: {what} deleted, WAL not yet truncated (a reader holds it); "
                        "retry the erasure when idle"
                    )
    except sqlite3.Error as exc:
        raise sqlite_failure(exc, f"{path}: compaction after erasing {what} failed") from exc
