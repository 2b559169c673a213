"""The one way events reach the store from the engine: appended atomically under the engine's
lock, with the freezes arbitration says the write entails, then folded into the projections."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memkg.clock import Clock
from memkg.engine.projections import Projections
from memkg.errors import MemoryDisabled
from memkg.events.projection import UserMemory, asserted_facts
from memkg.events.store import AppendResult, EventStore
from memkg.events.stored import Shape
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import Fact

_NEW_EVENTS: Shape[NewEvent] = Shape(NewEvent, {})
_FACT_EVENT_FIELDS = _NEW_EVENTS.fields_set(_NEW_EVENTS.names)

Freezes = Callable[[UserMemory, Sequence[NewEvent], Mapping[str, Fact]], list[NewEvent]]
"""``(memory, pending, asserted) → key.frozen`` events the pending write leaves in a strong
conflict: ``memory``, the user's that the write reads; ``asserted``, the facts of its
``fact.asserted`` events by event id, read from their payloads
(``events.projection.asserted_facts``)."""


@dataclass(eq=False, repr=False)
class Journal:
    """Appends for every stage service; callers have checked the events they hand in."""

    store: EventStore
    projections: Projections
    clock: Clock
    lock: threading.RLock
    freezes: Freezes

    def append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        freeze: bool = False,
        memory: UserMemory | None = None,
        expected_purges: int | None = None,
    ) -> AppendResult:
        """Append ``events`` after ``expected_version`` (default: the current); with
        ``freeze``, the key freezes the write entails go in the same append.

        ``memory``: what ``writing(user_id)`` gave the block this append is made in (the
        same state of the stream, and writable), so it is not read again.
        ``expected_purges``: the store's purge count the events were worked out at (default:
        the one the user's memory was read at, in the pinned block); if a purge or erasure
        ran since, ``ConcurrencyConflict`` (``store.purged_meanwhile``) and nothing stored.
        """
        if memory is not None:  # inside ``writing``: the lock is held, the user pinned
            return self._append(user_id, events, memory, expected_version, idempotency_key,
                                freeze, expected_purges)  # fmt: skip
        with self.lock, self.projections.pinned(user_id):
            memory = self.writable(user_id)
            return self._append(user_id, events, memory, expected_version, idempotency_key,
                                freeze, expected_purges)  # fmt: skip

    def _append(
        self,
        user_id: str,
        events: Sequence[NewEvent],
        memory: UserMemory,
        expected_version: int | None,
        idempotency_key: str | None,
        freeze: bool,
        expected_purges: int | None = None,
    ) -> AppendResult:
        if expected_version is None:
            expected_version = memory.version
        asserted = None
        if freeze:  # the new facts are read once, for the freeze check and for the fold
            asserted = asserted_facts(events, memory.seq)
            events = [*events, *self.freezes(memory, events, asserted)]
        # the purge count the memory was read at (in the user's pinned block): a write worked
        # out on memory a purge or erasure (in another process) removed since is refused, as
        # a decision's log is
        mark = self.projections.pin(user_id) if expected_purges is None else None
        appended = self.store.append(
            user_id,
            events,
            expected_version=expected_version,
            idempotency_key=idempotency_key,
            expected_purges=mark[1] if mark is not None else expected_purges,
        )
        if not appended.duplicate:
            self.projections.applied(user_id, appended.events, asserted)
        return appended

    @contextmanager
    def batch(self, users: Collection[str]) -> Iterator[None]:
        """The block's appends in one commit, the engine's lock held (before the store's, as
        every write and decision takes them). A block that fails stored nothing: the views
        of ``users`` are dropped, since they folded the appends made before the failure, and
        another process's writes would otherwise be folded onto them."""
        with self.lock:
            try:
                with self.store.batch(users):
                    yield
            except BaseException:
                for user in set(users):
                    self.projections.changed(user)
                raise

    @contextmanager
    def writing(self, user_id: str) -> Iterator[UserMemory]:
        """The block of one write to the user: the write lock held, the user's projections
        pinned (``Projections.pinned``), and the ``writable`` memory the write reads."""
        with self.lock, self.projections.pinned(user_id):
            yield self.writable(user_id)

    def writable(self, user_id: str) -> UserMemory:
        """The user's memory, or ``MemoryDisabled`` when the user turned memory off: the
        guard every write passes but the switch's and the links' own events."""
        memory = self.projections.memory(user_id)
        if memory.memory_off is not None:
            raise MemoryDisabled(user_id)
        return memory

    def unguarded(
        self, appends: Sequence[tuple[str, Sequence[NewEvent]]],
        *, checked: Mapping[str, int] | None = None,
    ) -> None:  # fmt: skip
        """Switch and link events, each id's in one append to its own stream, all in one
        commit, whatever the switch says; every view that reads those streams is dropped.
        ``checked`` holds the stream versions the events were worked out at: the commit
        fails with ``ConcurrencyConflict`` if another writer moved one of them since."""
        with self.lock:
            with self.batch([user for user, events in appends if events]):
                for user, events in appends:
                    if events:
                        version = (checked or {}).get(user)
                        if version is None:
                            version = self.store.stream_version(user)
                        self.store.append(user, events, expected_version=version)
            for user, _ in appends:
                self.projections.changed(user)

    def plain(
        self,
        user_id: str,
        domain: str,
        kind: EventType,
        payload: dict[str, Any],
        *,
        subject_id: str | None = None,
    ) -> Event:
        """Append one event that is about a key, not a fact.

        ``subject_id`` (a review id, a note id) goes where a fact id would, so that erasure
        by fact id can find the event.
        """
        event = NewEvent(
            event_id=self.clock.new_id("evt"),
            type=kind,
            user_id=user_id,
            domain=domain,
            payload=payload,
            recorded_at=self.clock.now(),
            fact_id=subject_id,
        )
        return self.append(user_id, [event]).events[0]

    def fact_event(self, kind: EventType, fact: Fact, payload: dict[str, Any]) -> NewEvent:
        """An event about ``fact`` (not yet appended), carrying its audit id.

        Built without validation: every field is of its declared type already (an id and a
        time from the clock, a fact's own fields), and the payload is copied as validation
        would copy it."""
        values = {
            "event_id": self.clock.new_id("evt"), "type": kind, "user_id": fact.user_id,
            "domain": fact.domain, "payload": dict(payload), "recorded_at": self.clock.now(),
            "fact_id": fact.id, "audit_log_id": fact.provenance.audit_log_id,
        }  # fmt: skip
        return _NEW_EVENTS.build(values, _FACT_EVENT_FIELDS)
