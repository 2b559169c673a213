"""``MemoryEventStore``: the in-memory twin of the event store, for tests and single runs.

It honours the same contract as the SQLite and PostgreSQL adapters and shares their
conventions (defined here, imported by them): ``recorded_at`` is kept in UTC (a naive
datetime is taken to be UTC), payloads are stored as a JSON copy, the stream version survives
``purge_facts``, a ``seq`` is never reused, and an erased user's stream starts again at 0.
Payloads returned by reads are shared between readers: treat them as read-only.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import json
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from memkg.errors import ConcurrencyConflict, InvalidOperation, StoreError
from memkg.events.store import (
    REVIEW_TYPES,
    AppendResult,
    Companion,
    ErasureCounts,
    purged_meanwhile,
)
from memkg.model.event import Event, EventType, NewEvent

_BATCH = 5_000
_TYPES = {t.value: t for t in EventType}
_FIELDS = set(Event.model_fields)
"""The fields set of every stored event, shared: a frozen model's set is never changed in
place (``model_copy`` copies it first)."""
_new = Event.__new__
_set = object.__setattr__


def utc_instant(at: datetime) -> datetime:
    """``at`` in UTC; a naive datetime is taken to be UTC already."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def removal_digest(event_ids: Iterable[str]) -> str:
    """sha256 over removed event ids in log order, one per line: what ``ErasureCounts`` proves."""
    h = hashlib.sha256()
    for event_id in event_ids:
        h.update(event_id.encode() + b"\n")
    return h.hexdigest()


def purge_counts(
    removed: Iterable[tuple[int, str]], keys: int = 0, companions: tuple[int, ...] = ()
) -> ErasureCounts:
    """What ``purge_facts`` reports for the removed ``(seq, event_id)`` rows, in any order,
    the idempotency keys that went with them and the companions' rows."""
    ids = [event_id for _, event_id in sorted(removed)]
    return ErasureCounts(events=len(ids), salts=0, idempotency_keys=keys,
                         digest=removal_digest(ids), companions=companions)  # fmt: skip


def subject_digest(secret: bytes, user_id: str) -> str:
    """HMAC-SHA256 of a user id: lets an operator check an erasure without keeping the id."""
    return hmac.new(secret, user_id.encode(), hashlib.sha256).hexdigest()


_PAYLOAD = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""``json.dumps`` with these options builds this encoder on every call; one is kept instead."""


def payload_json(event: NewEvent) -> str:
    """The event's payload as compact JSON, the form every store keeps."""
    return payload_text(event)[0]


def payload_text(event: NewEvent) -> tuple[str, dict[str, Any]]:
    """``payload_json``, and the payload that text reads back as (what a stored event
    carries), or ``StoreError`` for a payload that is not JSON.

    orjson writes the text where it reads back as the payload given: plain JSON values, the
    usual case. Anything else (NaN or Infinity, which orjson would write as null; a tuple;
    a datetime; a key that is not text; an integer past 64 bits) takes ``json``'s checked
    path, which refuses what is not JSON as before."""
    payload = event.payload
    try:
        text = orjson.dumps(payload)
    except TypeError:
        pass
    else:
        read: dict[str, Any] = orjson.loads(text)
        if read == payload:
            return text.decode(), read
    try:
        checked = _PAYLOAD.encode(payload)
        return checked, orjson.loads(checked)  # as a stored row reads back (``row_payload``)
    except (TypeError, ValueError) as exc:  # orjson's JSONDecodeError is a ValueError too
        raise StoreError(f"payload of event {event.event_id!r} is not JSON: {exc}") from exc


def stored_event(
    seq: int,
    event_id: str,
    user_id: str,
    version: int,
    type_: str,
    domain: str | None,
    fact_id: str | None,
    audit_log_id: str | None,
    payload: dict[str, Any],
    recorded_at: datetime,
) -> Event:
    """An ``Event`` from a stored row, in the stores' column order."""
    # Rows were validated when written and carry every field, so this is ``model_construct``
    # without its per-field loop, which costs more than the rest of a read (rebuild speed).
    event = _new(Event)
    _set(event, "__dict__", {
        "event_id": event_id, "type": _TYPES[type_], "user_id": user_id, "domain": domain,
        "payload": payload, "recorded_at": recorded_at, "fact_id": fact_id,
        "audit_log_id": audit_log_id, "seq": seq, "version": version,
    })  # fmt: skip
    _set(event, "__pydantic_fields_set__", _FIELDS)
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


def group_fact_ids(rows: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``(user_id, fact_id)`` pairs in log order, as fact ids by user without repeats."""
    found: dict[str, list[str]] = {}
    for user_id, fact_id in rows:
        ids = found.setdefault(user_id, [])
        if fact_id not in ids:
            ids.append(fact_id)
    return found


def check_batch(user_id: str, events: Sequence[NewEvent]) -> None:
    """Refuse a batch that would land events in another user's stream."""
    for event in events:
        if event.user_id != user_id:
            raise InvalidOperation(
                f"event {event.event_id!r} belongs to user {event.user_id!r}, "
                f"not to the stream {user_id!r} it is appended to",
                code="store.user_mismatch",
            )


class MemoryEventStore:
    """Every stream in a dict, guarded by one lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._log: list[Event] = []
        self._seqs: list[int] = []
        self._last_seq = 0
        self._versions: dict[str, int] = {}
        self._purges = 0
        self._streams: dict[str, list[Event]] = {}
        self._event_ids: set[str] = set()
        self._keys: dict[tuple[str, str], tuple[int, int]] = {}
        self._salts: dict[str, bytes] = {}
        self._secret = os.urandom(32)
        self.erasures: dict[str, tuple[str, str, int, str, int]] = {}
        """Tombstones: erasure id -> (at, subject digest, events removed, digest)."""

    def append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        expected_purges: int | None = None,
    ) -> AppendResult:
        check_batch(user_id, events)
        with self._lock:
            if idempotency_key is not None and (user_id, idempotency_key) in self._keys:
                first, last = self._keys[user_id, idempotency_key]
                stored = [e for e in self._slice(first, last) if e.user_id == user_id]
                if stored and stored[0].seq == first:
                    return AppendResult(events=tuple(stored), duplicate=True)
                del self._keys[user_id, idempotency_key]  # its write was purged: store anew
            if expected_purges is not None and expected_purges != self._purges:
                raise purged_meanwhile(user_id, expected_purges, self._purges)
            version = self._versions.get(user_id, 0)
            if expected_version is not None and expected_version != version:
                raise ConcurrencyConflict(user_id, expected_version, version)
            taken = [e.event_id for e in events if e.event_id in self._event_ids]
            if taken or len({e.event_id for e in events}) != len(events):
                raise StoreError(f"event ids already stored: {taken or 'repeated in batch'}")
            stored = [_stored(e, self._last_seq + i, version + i) for i, e in enumerate(events, 1)]
            if not stored:
                return AppendResult(events=())
            self._log.extend(stored)
            self._streams.setdefault(user_id, []).extend(stored)
            self._seqs.extend(e.seq for e in stored)
            self._event_ids.update(e.event_id for e in stored)
            self._last_seq = stored[-1].seq
            self._versions[user_id] = stored[-1].version
            if idempotency_key is not None:
                self._keys[user_id, idempotency_key] = (stored[0].seq, stored[-1].seq)
            return AppendResult(events=tuple(stored))

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> list[Event]:
        with self._lock:
            stream = self._streams.get(user_id, [])
            return [e for e in stream if (up_to_seq is None or e.seq <= up_to_seq)
                    and e.version > after_version]  # fmt: skip

    def read_reviews(self, *, after_seq: int = 0, review_id: str | None = None) -> Iterator[Event]:
        # no index here: the log is scanned (the SQL stores read an index of the reviews)
        while True:
            with self._lock:  # per batch, never across a yield
                start = bisect.bisect_right(self._seqs, after_seq)
                batch = self._log[start : start + _BATCH]
            if not batch:
                return
            yield from (e for e in batch if e.type.value in REVIEW_TYPES
                        and (review_id is None or e.fact_id == review_id))  # fmt: skip
            after_seq = batch[-1].seq

    def read_all(self, *, after_seq: int = 0, up_to_seq: int | None = None) -> Iterator[Event]:
        while True:
            # The lock is held per batch, never across a yield.
            with self._lock:
                start = bisect.bisect_right(self._seqs, after_seq)
                batch = self._log[start : start + _BATCH]
            if up_to_seq is not None:
                batch = [e for e in batch if e.seq <= up_to_seq]
            if not batch:
                return
            yield from batch
            after_seq = batch[-1].seq

    def stream_version(self, user_id: str) -> int:
        with self._lock:
            return self._versions.get(user_id, 0)

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        with self._lock:
            return self._versions.get(user_id, 0), self._purges

    def head(self) -> int:
        with self._lock:
            return self._seqs[-1] if self._seqs else 0

    def purges(self) -> int:
        with self._lock:
            return self._purges

    def users(self) -> list[str]:
        with self._lock:
            return sorted(self._versions)

    def users_in(self, domain: str) -> list[str]:
        with self._lock:
            return sorted({e.user_id for e in self._log if e.domain == domain})

    def subject_salt(self, user_id: str) -> bytes:
        with self._lock:
            return self._salts.setdefault(user_id, os.urandom(16))

    def fact_ids_with_audit_id(self, audit_log_id: str) -> dict[str, list[str]]:
        with self._lock:
            return group_fact_ids(
                (e.user_id, e.fact_id)
                for e in self._log
                if e.audit_log_id == audit_log_id and e.fact_id is not None
            )

    def purge_facts(
        self, user_id: str, fact_ids: Sequence[str], *, companions: Sequence[Companion] = ()
    ) -> ErasureCounts:
        wanted = set(fact_ids)
        with self._lock:
            others = tuple(c.erase_rows(None, user_id) for c in companions)  # first, as below
            firsts = {e.seq for e in self._streams.get(user_id, []) if e.fact_id in wanted}
            removed = self._remove(lambda e: e.user_id == user_id and e.fact_id in wanted)
            keys = [
                k for k, (first, _) in self._keys.items() if k[0] == user_id and first in firsts
            ]
            for k in keys:
                del self._keys[k]
            self._purges += 1
        return purge_counts(enumerate(removed), len(keys), others)

    def erase_subject(
        self, user_id: str, *, erasure_id: str, at_iso: str,
        companions: Sequence[Companion] = (),
    ) -> ErasureCounts:  # fmt: skip
        with self._lock:
            # in memory there is no transaction: the companions go first, so one that fails
            # leaves the log untouched
            others = tuple(c.erase_rows(None, user_id) for c in companions)
            removed = self._remove(lambda e: e.user_id == user_id)
            salts = 1 if self._salts.pop(user_id, None) is not None else 0
            keys = [k for k in self._keys if k[0] == user_id]
            for k in keys:
                del self._keys[k]
            self._versions.pop(user_id, None)
            self._purges += 1
            digest = removal_digest(removed)
            self.erasures.setdefault(  # the purge count this erasure set orders it
                erasure_id,
                (at_iso, subject_digest(self._secret, user_id), len(removed), digest,
                 self._purges),
            )  # fmt: skip
        return ErasureCounts(
            events=len(removed), salts=salts, idempotency_keys=len(keys), digest=digest,
            companions=others,
        )  # fmt: skip

    def was_erased(self, user_id: str, after: int | None = None) -> bool:
        """Whether a tombstone records this user's erasure (counted past ``after``)."""
        digest = subject_digest(self._secret, user_id)
        with self._lock:
            return any(t[1] == digest and (after is None or t[4] > after)
                       for t in self.erasures.values())  # fmt: skip

    @contextmanager
    def batch(self, streams: Collection[str] = ()) -> Iterator[None]:
        # Like a transaction: a failure escaping the block puts every append back.
        with self._lock:
            saved = self._saved()
            try:
                yield
            except BaseException:
                self._restore(saved)
                raise

    def erasing(self, streams: Collection[str] = ()) -> AbstractContextManager[None]:
        """The erasures and purges of the block, put back when it fails (contract item 8;
        companions' rows are theirs to keep)."""
        return self.batch()

    def _saved(self) -> tuple[Any, ...]:
        return (
            list(self._log), list(self._seqs), self._last_seq, dict(self._versions),
            {user: list(events) for user, events in self._streams.items()},
            set(self._event_ids), dict(self._keys), dict(self._salts), dict(self.erasures),
            self._purges,
        )  # fmt: skip

    def _restore(self, saved: tuple[Any, ...]) -> None:
        (self._log, self._seqs, self._last_seq, self._versions, self._streams,
         self._event_ids, self._keys, self._salts, self.erasures, self._purges) = saved  # fmt: skip

    def files(self) -> list[Path]:
        return []

    def close(self) -> None:
        pass

    def _slice(self, first: int, last: int) -> list[Event]:
        lo = bisect.bisect_left(self._seqs, first)
        hi = bisect.bisect_right(self._seqs, last)
        return self._log[lo:hi]

    def _remove(self, doomed: Callable[[Event], bool]) -> list[str]:
        removed = [e.event_id for e in self._log if doomed(e)]
        if removed:
            self._log = [e for e in self._log if not doomed(e)]
            self._seqs = [e.seq for e in self._log]
            self._streams = {}
            for e in self._log:
                self._streams.setdefault(e.user_id, []).append(e)
            self._event_ids.difference_update(removed)
        return removed


def _stored(event: NewEvent, seq: int, version: int) -> Event:
    payload = json.loads(payload_json(event))
    return stored_event(
        seq, event.event_id, event.user_id, version, event.type.value, event.domain,
        event.fact_id, event.audit_log_id, payload, utc_instant(event.recorded_at),
    )  # fmt: skip
