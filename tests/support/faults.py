"""``FaultyStore``: an ``EventStore`` that passes every call on, with faults on a schedule.

For the faults the OS cannot produce on demand. Per append, one of:

* ``fail``: the append never reaches the store and raises ``StoreError`` (``store.io``);
* ``lost_ack``: the append is stored, then ``StoreError`` is raised as if the reply was lost;
* ``duplicate``: the append is delivered twice (a retransmission); the second delivery's
  reply, conflict or duplicate, is dropped as a network would;
* ``delay``: the append waits ``delay`` seconds (through ``sleep``) before it goes on;
* ``drop``: broken on purpose: the append is acknowledged and never stored (detection tests).

A fault is chosen by append number (``at={3: "fail"}``) or drawn from ``rng`` with ``rates``,
so a seed fixes the whole schedule. ``salt`` replaces the store's random per-user salts so that
a seeded run writes the same bytes every time. ``injected`` counts what was done.

``StatementFaults`` fails one SQL statement of the real SQLite and PostgreSQL adapters (the
``n``-th a run makes), for operations that must be all or nothing whichever statement fails.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import Any

from memkg.errors import ConcurrencyConflict, StoreError
from memkg.events.store import AppendResult, Companion, ErasureCounts, EventStore
from memkg.model.event import Event, NewEvent

KINDS = ("fail", "lost_ack", "duplicate", "delay", "drop")


class FaultyStore:
    def __init__(
        self,
        inner: EventStore,
        *,
        at: dict[int, str] | None = None,
        rates: dict[str, float] | None = None,
        rng: random.Random | None = None,
        delay: float = 0.01,
        sleep: Callable[[float], None] = time.sleep,
        salt: bytes | None = None,
    ) -> None:
        unknown = {*(at or {}).values(), *(rates or {})} - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; use {KINDS}")
        self.inner = inner
        self.at = dict(at or {})
        self.rates = dict(rates or {})
        self.rng = rng or random.Random(0)
        self.delay = delay
        self.sleep = sleep
        self.salt = salt
        self.appends = 0
        self.injected: Counter[str] = Counter()

    def _draw(self) -> str | None:
        if self.appends in self.at:
            return self.at[self.appends]
        roll = self.rng.random()
        for kind, rate in sorted(self.rates.items()):
            if roll < rate:
                return kind
            roll -= rate
        return None

    def append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        expected_purges: int | None = None,
    ) -> AppendResult:
        self.appends += 1
        fault = self._draw()
        if fault is not None:
            self.injected[fault] += 1
        if fault == "fail":
            raise StoreError(f"injected fault: append {self.appends} failed", code="store.io")
        if fault == "drop":
            return _unstored(self.inner, user_id, events)
        if fault == "delay":
            self.sleep(self.delay)
        result = self.inner.append(
            user_id, events, expected_version=expected_version, idempotency_key=idempotency_key,
            expected_purges=expected_purges,
        )
        if fault == "duplicate":
            with suppress(ConcurrencyConflict):  # the expected version guards the second one
                self.inner.append(
                    user_id, events,
                    expected_version=expected_version, idempotency_key=idempotency_key,
                )  # fmt: skip
        if fault == "lost_ack":
            raise StoreError(
                f"injected fault: append {self.appends} was stored but its reply was lost",
                code="store.io",
            )
        return result

    def subject_salt(self, user_id: str) -> bytes:
        if self.salt is None:
            return self.inner.subject_salt(user_id)
        return hashlib.sha256(self.salt + user_id.encode()).digest()[:16]

    # -- everything else goes straight through ---------------------------------------------

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> list[Event]:
        return self.inner.read_stream(user_id, up_to_seq=up_to_seq, after_version=after_version)

    def read_all(self, *, after_seq: int = 0, up_to_seq: int | None = None) -> Iterator[Event]:
        return self.inner.read_all(after_seq=after_seq, up_to_seq=up_to_seq)

    def read_reviews(self, *, after_seq: int = 0, review_id: str | None = None) -> Iterator[Event]:
        return self.inner.read_reviews(after_seq=after_seq, review_id=review_id)

    def stream_version(self, user_id: str) -> int:
        return self.inner.stream_version(user_id)

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        return self.inner.stream_mark(user_id)

    def head(self) -> int:
        return self.inner.head()

    def purges(self) -> int:
        return self.inner.purges()

    def users(self) -> list[str]:
        return self.inner.users()

    def users_in(self, domain: str) -> list[str]:
        return self.inner.users_in(domain)

    def fact_ids_with_audit_id(self, audit_log_id: str) -> dict[str, list[str]]:
        return self.inner.fact_ids_with_audit_id(audit_log_id)

    def purge_facts(
        self, user_id: str, fact_ids: Sequence[str], *, companions: Sequence[Companion] = ()
    ) -> ErasureCounts:
        return self.inner.purge_facts(user_id, fact_ids, companions=companions)

    def erase_subject(
        self, user_id: str, *, erasure_id: str, at_iso: str,
        companions: Sequence[Companion] = (),
    ) -> ErasureCounts:  # fmt: skip
        return self.inner.erase_subject(
            user_id, erasure_id=erasure_id, at_iso=at_iso, companions=companions
        )

    def was_erased(self, user_id: str, after: int | None = None) -> bool:
        return self.inner.was_erased(user_id, after)

    def batch(self, streams: Collection[str] = ()) -> AbstractContextManager[None]:
        return self.inner.batch(streams)

    def erasing(self, streams: Collection[str] = ()) -> AbstractContextManager[None]:
        return self.inner.erasing(streams)

    def files(self) -> list[Path]:
        return self.inner.files()

    def close(self) -> None:
        self.inner.close()


def _unstored(store: EventStore, user_id: str, events: Sequence[NewEvent]) -> AppendResult:
    """The reply an append would get, for events that were never stored (``drop``)."""
    version, head = store.stream_version(user_id), store.head()
    made = [
        Event(**e.model_dump(), seq=head + i, version=version + i) for i, e in enumerate(events, 1)
    ]
    return AppendResult(events=tuple(made))


class StatementFaults:
    """Fails one SQL statement: the ``n``-th that SQLite or PostgreSQL connections run while
    armed, as a disk or network error would, before it reaches the database.

    ``install`` makes every SQLite file connection and every psycopg connection opened after
    it count its statements (``execute``, ``executemany``, ``executescript``), so a test can
    fail each statement of an operation in turn. ``seen`` counts the statements of the armed
    run, ``fired`` tells whether the fault was met.
    """

    def __init__(self) -> None:
        self.armed: int | None = None
        self.seen = 0
        self.fired = False

    def arm(self, n: int) -> None:
        self.armed, self.seen, self.fired = n, 0, False

    def disarm(self) -> None:
        self.armed = None

    def statement(self, error: Callable[[], Exception]) -> None:
        if self.armed is None:
            return
        self.seen += 1
        if self.seen == self.armed:
            self.fired = True
            raise error()

    def install(self, monkeypatch: Any) -> None:
        import sqlite3

        connect = sqlite3.connect
        factory = _sqlite_connection(self)

        def counted(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
            if str(database) == ":memory:":
                return connect(database, *args, **kwargs)
            return connect(database, *args, factory=factory, **kwargs)

        monkeypatch.setattr(sqlite3, "connect", counted)
        with suppress(ImportError):
            import psycopg

            monkeypatch.setattr(psycopg, "connect", _pg_connection(self).connect)


def _sqlite_connection(faults: StatementFaults) -> type[Any]:
    import sqlite3

    def failure() -> Exception:
        return sqlite3.OperationalError("disk I/O error (injected)")

    class Connection(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            faults.statement(failure)
            return super().execute(sql, parameters)

        def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
            faults.statement(failure)
            return super().executemany(sql, parameters)

        def executescript(self, script: str, /) -> sqlite3.Cursor:
            faults.statement(failure)
            return super().executescript(script)

    return Connection


def _pg_connection(faults: StatementFaults) -> type[Any]:
    import psycopg

    def failure() -> Exception:
        return psycopg.OperationalError("server closed the connection (injected)")

    class Connection(psycopg.Connection[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            faults.statement(failure)
            return super().execute(query, params, **kwargs)

    return Connection
