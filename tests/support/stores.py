"""Engines over the stores the durability tests use, including one that is broken on purpose.

A store ``spec`` is a JSON-able dict, so a child process can open the same store:
``{"backend": "sqlite", "where": PATH}``, ``{"backend": "postgres", "where": DSN, "schema": S}``,
plus ``"store": "ack_early"`` for ``EarlyAckStore``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from memkg import Clock, Engine, SqliteDecisionLog
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import AppendResult
from memkg.model.event import NewEvent


class EarlyAckStore(SqliteEventStore):
    """Broken on purpose: ``append`` returns before its events are committed.

    Appends go into an open transaction that commits every ``every`` appends, so a crash loses
    writes the caller was told were stored. The crash harness must notice.
    """

    def __init__(self, path: str | Path, *, every: int = 6) -> None:
        super().__init__(path)
        self._every = every
        self._pending = 0
        self._open: AbstractContextManager[None] | None = None

    def append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        expected_purges: int | None = None,
    ) -> AppendResult:
        if self._open is None:
            self._open = self.batch()
            self._open.__enter__()
        result = super().append(
            user_id, events, expected_version=expected_version, idempotency_key=idempotency_key,
            expected_purges=expected_purges,
        )
        self._pending += 1
        if self._pending >= self._every:
            self.flush()
        return result

    def flush(self) -> None:
        if self._open is not None:
            self._open.__exit__(None, None, None)
            self._open, self._pending = None, 0

    def erasing(self, streams: Collection[str] = ()) -> AbstractContextManager[None]:
        self.flush()  # VACUUM cannot run inside the open transaction
        return super().erasing(streams)

    def close(self) -> None:
        self.flush()
        super().close()


def open_engine(spec: dict[str, Any], clock: Clock, *, checking: bool = False) -> Engine:
    """The engine ``spec`` names; ``checking``: the honest store, to inspect what was written."""
    if spec["backend"] == "postgres":
        return Engine.connect(spec["where"], schema=spec["schema"], clock=clock)
    path = Path(spec["where"])
    if spec.get("store") == "ack_early":
        # The open transaction holds the file's write lock: decisions go to a file of their own.
        store = SqliteEventStore(path) if checking else EarlyAckStore(path)
        log = SqliteDecisionLog(path.with_name(path.name + ".decisions"))
        return Engine(store, clock=clock, decision_log=log)
    return Engine.open(path, clock=clock)
