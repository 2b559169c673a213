"""What every SQLite file memkg writes does after an erasure deleted rows from it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memkg.errors import StoreError, sqlite_failure

_STEPS = ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)")


def compact(db: sqlite3.Connection, path: Path, what: str) -> None:
    """Rewrite the file and empty its WAL, so that deleted rows leave no bytes behind: deleted
    rows linger in WAL frames and free pages until checkpointed and vacuumed. ``what`` names
    the rows (``decisions``, ``traces``...) in the error raised when a reader pins the WAL."""
    try:
        for step in _STEPS:
            busy = db.execute(step).fetchone()
            if step.startswith("PRAGMA") and busy and busy[0]:
                raise StoreError(
                    f"{path}: {what} deleted, WAL not yet truncated (a reader holds it); "
                    "retry the erasure when idle"
                )
    except sqlite3.Error as exc:
        raise sqlite_failure(exc, f"{path}: compaction after erasing {what} failed") from exc
