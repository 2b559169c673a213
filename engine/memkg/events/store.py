"""The ``EventStore`` port: per-user streams in one globally ordered log.

Contract every adapter honours (tests in ``tests/unit/events`` run against all of them):

1. ``append`` is atomic: all events of one call are stored, with consecutive stream versions
   and increasing global ``seq``, or none are.
2. ``expected_version`` is the stream version the writer last saw (0 for a new stream);
   when it is stale the call raises ``ConcurrencyConflict`` and stores nothing.
   ``None`` skips the check (for system writers that do not read first).
3. An ``idempotency_key`` already used in the stream returns the events stored the first
   time, with ``duplicate=True``, and stores nothing (whether the body matches is the
   caller's to check: the first event carries what it needs). ``purge_facts`` removes the
   keys whose first event it removes, so a retry of a purged write stores it anew.
4. ``erase_subject`` removes every row about the user (events, salts, idempotency keys) so
   that no byte of it remains in the store's files, and records only an anonymous tombstone.
   The ``companions`` it is given (stores in the same database: decisions, keys and audit,
   vectors) lose their rows in the same transaction: when one fails, nothing is removed
   anywhere. ``purge_facts`` takes companions the same way (the decisions citing the facts).
5. Inside ``with store.batch():`` appends share one durable commit (bulk ingest pays one
   fsync, not one per write); each append stays atomic on its own: a conflicting one stores
   nothing and raises, the others still commit when the block ends; an exception escaping
   the block stores none of them.
6. ``recorded_at`` comes back in UTC; stream versions are never reused after a purge and start
   again at 0 after an erasure; ``head()`` is the highest seq stored now; ``users()`` lists the
   users with a non-empty stream, sorted.
7. ``stream_mark`` changes whenever the user's stream does: an append raises its version,
   ``purge_facts`` and ``erase_subject`` (which keep or reset versions) raise the store-wide
   purge count (``purges``), so a process caching projections sees another process's purge
   too.
8. Inside ``with store.erasing():`` every ``erase_subject`` and ``purge_facts`` (and their
   companions' statements) is one transaction: all of them commit when the block ends, or,
   when anything fails or the process dies first, none does. What follows a commit (SQLite
   rewrites the file, PostgreSQL vacuums as ``erase_vacuum`` says) runs once, after it, over
   every table the block touched. Reads inside the block see its changes. (The memory store
   has no transaction: it puts its own state back when the block fails.)
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict

from memkg.errors import ConcurrencyConflict, ConfigError
from memkg.model.event import Event, EventType, NewEvent, StoredRow

REVIEW_TYPES = (EventType.KEY_FROZEN.value, EventType.REVIEW_RESOLVED.value)
"""The event types ``read_reviews`` returns; the SQL stores index only the rows of these."""
REVIEWS_WHERE = "type IN ('key.frozen', 'review.resolved')"
"""Their condition, spelled alike in the partial index and the query (SQLite uses a partial
index only for a query whose condition is the index's own)."""


class AppendResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    events: tuple[Event, ...]
    duplicate: bool = False

    @property
    def version(self) -> int:
        return self.events[-1].version if self.events else 0


class ErasureCounts(BaseModel):
    """What an erasure or purge removed from the store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: int
    salts: int
    idempotency_keys: int
    digest: str
    """sha256 over the removed events' ids, in log order: proves what was removed."""
    companions: tuple[int, ...] = ()
    """Rows each companion store removed or rewrote, in the order they were given."""


@runtime_checkable
class Companion(Protocol):
    """A store kept in the event log's own database (the decision log, the access store):
    ``erase_subject(..., companions=...)`` removes its rows about the subject inside the
    event log's transaction, so an erasure that fails or is killed midway leaves nothing
    partial behind."""

    @property
    def database(self) -> str:
        """Where its rows live (``sqlite:/abs/path``, ``postgresql:DSN#schema``): a companion
        must name the event store's own database."""
        ...

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables ``erase_rows`` changes (PostgreSQL vacuums them after the erasure)."""
        ...

    def erase_rows(self, db: Any, user_id: str) -> int:
        """Remove (or pseudonymise) the subject's rows through ``db``, the event store's
        connection inside its open transaction; return how many rows."""
        ...


def beside(store: object, companion: object) -> bool:
    """Whether ``companion`` keeps its rows in ``store``'s own database."""
    where = getattr(store, "database", None)
    return where is not None and where == getattr(companion, "database", None)


def check_companions(database: str, companions: Sequence[Companion]) -> None:
    """Refuse a companion kept elsewhere: one transaction cannot reach it."""
    for companion in companions:
        if companion.database != database:
            raise ConfigError(
                f"{type(companion).__name__} keeps its rows in {companion.database}, not in the "
                f"event store's {database}: erase it on its own, or keep it beside the events"
            )


class SnapshotStore(Protocol):
    """A store that keeps a snapshot of each user's folded state beside the log: a compact
    copy of what folding the user's stream up to a version gives, so a user not resident
    loads in one read plus the events after it. Snapshots are a cache, never the truth: a
    store without them folds the log, and one whose snapshot no longer matches the log (a
    purge or erasure since, another format) reads none."""

    def read_snapshot(self, user_id: str, format_: str) -> tuple[int, int, bytes] | None:
        """``(version, seq, body)`` of the user's snapshot in ``format_`` while it matches
        the log, else ``None``."""
        ...

    def write_snapshot(
        self, user_id: str, version: int, seq: int, purges: int, format_: str, body: bytes
    ) -> bool:
        """Keep ``body`` as the user's state at ``version`` (its event numbered ``seq``),
        read when the store had seen ``purges`` purges and erasures; stored only while that
        still holds (``False`` otherwise). Erasure and purges drop the user's snapshot."""
        ...


def snapshot_store(store: object) -> SnapshotStore | None:
    """``store`` as a ``SnapshotStore`` when it keeps snapshots, else ``None``."""
    if all(callable(getattr(store, name, None)) for name in ("read_snapshot", "write_snapshot")):
        return cast(SnapshotStore, store)
    return None


class RowStream(Protocol):
    """A store that hands a user's stream over as the rows it keeps (``model.event.StoredRow``):
    a user folded from scratch costs no ``Event`` per row (``Projections`` folds rows when
    the store has them, events otherwise)."""

    def read_rows(
        self, user_id: str, *, after_version: int = 0, up_to_version: int | None = None,
        types: Sequence[str] = (),
    ) -> list[StoredRow]:  # fmt: skip
        """The user's stream as stored rows, in stream order (``read_stream``'s events): after
        ``after_version``, up to ``up_to_version`` (default: all), of ``types`` (default: all)."""
        ...

    def row_event(self, row: StoredRow) -> Event:
        """The event of one row, equal to the one ``read_stream`` gives."""
        ...

    def read_all_rows(
        self, *, after_seq: int = 0, up_to_seq: int | None = None
    ) -> Iterator[StoredRow]:
        """The whole log as stored rows, in log order (``read_all``'s events)."""
        ...

    def read_rows_by_user(self) -> Iterator[StoredRow]:
        """The whole log as stored rows, user after user, each user's in stream order: what
        a fold of every user reads to hold one user's memory at a time (a rebuild)."""
        ...


def row_stream(store: object) -> RowStream | None:
    """``store`` as a ``RowStream`` when it hands over its rows, else ``None`` (looked up on
    the store itself: ``isinstance`` on a protocol caches its answer per class)."""
    if all(
        callable(getattr(store, name, None))
        for name in ("read_rows", "row_event", "read_all_rows", "read_rows_by_user")
    ):
        return cast(RowStream, store)
    return None


@runtime_checkable
class EventStore(Protocol):
    def append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        expected_purges: int | None = None,
    ) -> AppendResult:
        """Append ``events`` to the user's stream, after ``expected_version`` when given
        (``ConcurrencyConflict`` otherwise); a retried ``idempotency_key`` gives the events
        it stored. ``expected_purges``: the store's count of purges and erasures
        (``stream_mark``) the write's reads were made at; if one ran since, the append is
        refused with ``ConcurrencyConflict`` (code ``store.purged_meanwhile``), checked in the
        append's own transaction, so that no write worked out on memory a purge or erasure
        removed lands after it (the stream's version does not tell: a purge leaves it, an
        erasure starts it again from 0)."""
        ...

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> list[Event]:
        """The user's events in order: those at or before log position ``up_to_seq`` (default:
        all), after stream version ``after_version`` (default: from the first; a cached
        projection at that version reads only what it lacks)."""
        ...

    def read_all(self, *, after_seq: int = 0, up_to_seq: int | None = None) -> Iterator[Event]: ...

    def read_reviews(self, *, after_seq: int = 0, review_id: str | None = None) -> Iterator[Event]:
        """Every user's ``key.frozen`` and ``review.resolved`` events, in log order, after log
        position ``after_seq``: the review queue, read by an index that holds only them
        (``REVIEW_TYPES``), so its cost follows the reviews, not the log, and a reader that
        keeps the queue reads only the reviews' news. ``review_id``: that review's events
        only, by the fact-id index (they carry their review's id as their fact id)."""
        ...

    def stream_version(self, user_id: str) -> int: ...

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        """The stream version and how many purges and erasures the store has seen, read
        together: a cached projection that still matches both is current (contract item 7)."""
        ...

    def head(self) -> int:
        """The highest ``seq`` stored (0 for an empty log)."""
        ...

    def purges(self) -> int:
        """How many purges and erasures the store has seen (``stream_mark``'s count), for a
        cache that spans users: one that follows the log (``read_reviews(after_seq=...)``)
        reads it again from the start when the count moved."""
        ...

    def users(self) -> list[str]: ...

    def users_in(self, domain: str) -> list[str]:
        """The users with an event in ``domain``, in ``users`` order: what a migration of the
        domain reads, without folding every user's memory to find out."""
        ...

    def subject_salt(self, user_id: str) -> bytes:
        """The user's secret salt for hashing PII, created on first use, erased with them."""
        ...

    def fact_ids_with_audit_id(self, audit_log_id: str) -> dict[str, list[str]]:
        """Fact ids (by user) whose provenance carries ``audit_log_id``."""
        ...

    def purge_facts(
        self, user_id: str, fact_ids: Sequence[str], *, companions: Sequence[Companion] = ()
    ) -> ErasureCounts:
        """Physically remove every event about these facts (erasure by audit id), and the
        idempotency keys of the writes they began; ``companions`` remove their rows about
        the user in the same transaction (counted in ``ErasureCounts.companions``)."""
        ...

    def erase_subject(
        self, user_id: str, *, erasure_id: str, at_iso: str,
        companions: Sequence[Companion] = (),
    ) -> ErasureCounts:  # fmt: skip
        """Remove every event, salt and idempotency key of the user, and through
        ``companions`` (stores in the same database) their rows too, in one transaction."""
        ...

    def was_erased(self, user_id: str, after: int | None = None) -> bool:
        """Whether a tombstone shows this user was erased (the id itself is not stored); with
        ``after``, by an erasure the store counted past ``after`` purges and erasures (as
        ``purges`` read it): erased since then (an id erased once may be a new user's since)."""
        ...

    def batch(self, streams: Collection[str] = ()) -> AbstractContextManager[None]:
        """Group appends into one commit (see contract item 5); ``streams``: the users the
        block appends to, locked up front where the store locks streams (PostgreSQL)."""
        ...

    def erasing(self, streams: Collection[str] = ()) -> AbstractContextManager[None]:
        """Make the erasures and purges of the block one transaction (contract item 8);
        ``streams``: the users the block erases, locked up front where the store locks
        streams (PostgreSQL), in one order, so that two erasures never wait on each other."""
        ...

    def files(self) -> list[Path]:
        """Every file this store writes (empty for in-memory stores)."""
        ...

    def close(self) -> None: ...


def purged_meanwhile(user_id: str, expected: int, actual: int) -> ConcurrencyConflict:
    """The refusal of an append whose reads were made before a purge or erasure that has run
    since (``EventStore.append``'s ``expected_purges``)."""
    return ConcurrencyConflict(
        user_id, expected, actual, code="store.purged_meanwhile",
        message=f"a purge or erasure ran after this write to {user_id!r} read memory (the "
        f"store counted {actual} of them, the write read at {expected}): nothing was stored; "
        "read the user's memory again and retry",
    )  # fmt: skip
