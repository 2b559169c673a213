"""Reads of current memory: the user's facts, one fact, a key's history, the raw stream, and
a rebuild of every projection from the whole log."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter, itemgetter

from pydantic import BaseModel, ConfigDict

from memkg.clock import Clock
from memkg.engine.projections import Projections, Upcast, instant
from memkg.engine.setup import Setup, check_args
from memkg.errors import NotFound, fact_not_found
from memkg.events.projection import UserMemory, fold_all, fold_each_user, row_fold
from memkg.events.store import EventStore, row_stream
from memkg.model.event import Event
from memkg.model.fact import Fact
from memkg.validate.limits import require_text

log = logging.getLogger(__name__)


class RebuildReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    users: int
    events: int
    facts: int
    seconds: float


@dataclass(eq=False, repr=False)
class Reads:
    """What memory holds about a user, now or as of a log position; see ``memkg.Engine``."""

    store: EventStore
    projections: Projections
    clock: Clock
    upcaster: Callable[[], Upcast | None]
    setup: Setup
    lock: threading.RLock
    """The engine's: what a read that keeps what it worked out in the projection holds
    (``facts_in``), as writes, decisions and ``resolve`` hold it."""

    def memory(self, user_id: str, *, as_of: int | None = None) -> UserMemory:
        """The user's projection, rebuilt from the log when stale (or as of ``as_of``; while
        the user's memory is off, the current view: a read made now sees what the switch says
        now, whatever time it asks about, and only a replay reads the past)."""
        check_args(user_id=user_id)
        current = self.projections.memory(user_id)
        if as_of is None or current.memory_off is not None:
            return current
        return self.projections.memory(user_id, as_of=as_of)

    def read_events(self, user_id: str) -> list[Event]:
        check_args(user_id=user_id)
        return self.store.read_stream(user_id)

    def facts(
        self,
        user_id: str,
        domain: str | None = None,
        *,
        as_of: int | None = None,
        at: datetime | None = None,
    ) -> list[Fact]:
        """What memory holds about the user now (or as of log position ``as_of``)."""
        check_args(user_id=user_id, domain=domain)
        self._known(domain)
        when = self.clock.now() if at is None else instant(at)
        memory = self.memory(user_id, as_of=as_of)
        with self.lock:  # the live index of a resident memory is kept as a write folds events
            return memory.current(domain, when)

    def facts_in(self, user_id: str, domain: str | None, session_id: str | None) -> list[Fact]:
        """What reads in ``session_id``'s session (or, for ``None``, outside every session)
        take in: ``facts`` but other sessions' notes and turn instructions
        (``UserMemory.current_in``). What recall ranks."""
        check_args(user_id=user_id, domain=domain, session_id=session_id)
        self._known(domain)
        with self.lock:  # the live index's split by scope is kept as a write folds events
            return self.memory(user_id).current_in(domain, session_id, self.clock.now())

    def fact(self, user_id: str, fact_id: str) -> Fact:
        check_args(user_id=user_id, fact_id=fact_id)
        fact = self.projections.memory(user_id).fact(fact_id)
        if fact is None:
            raise fact_not_found(user_id, fact_id)
        return fact

    def domain_of(self, user_id: str, item_id: str) -> str:
        """The domain of the user's fact or free-text note ``item_id`` (what access to it, or
        to ``retract`` it, is checked against)."""
        check_args(user_id=user_id, item_id=item_id)
        note = self.projections.notes(user_id).notes.get(item_id)
        return note.domain if note is not None else self.fact(user_id, item_id).domain

    def history(self, user_id: str, key: str, domain: str | None = None) -> list[Fact]:
        check_args(user_id=user_id, key=require_text(key, "key"), domain=domain)
        self._known(domain)
        memory = self.projections.memory(user_id)
        with self.lock:  # the key index is kept as a write folds events (``facts``)
            found = memory.history(key, domain)
        if not found:  # a key no domain declares, with nothing stored of it, is a typo
            registry = self.setup.registry
            declared = [d for d in ([domain] if domain else registry.domains())
                        if registry.spec(d, key) is not None]  # fmt: skip
            if not declared:
                why = registry.unknown_key(domain, key) if domain else registry.undeclared_key(key)
                raise NotFound(why, code="key.unknown")
        return found

    def _known(self, domain: str | None) -> None:
        self.setup.known(domain)

    def rebuild(self, *, progress: Callable[[int], None] | None = None) -> RebuildReport:
        """Fold every user's memory from the whole log, and time it; the caches start over
        (each user is folded from the log again when next read, within the memory bound).

        ``progress`` is called with the number of events applied so far, every 1,000.
        """
        start = time.perf_counter()
        users, facts, upcast = 0, 0, self.upcaster()

        def done(memory: UserMemory) -> None:
            nonlocal users, facts
            users, facts = users + 1, facts + memory.count

        # user after user where the store reads so: one user's memory held at a time
        rows, by_user = row_stream(self.store), getattr(self.store, "read_all_by_user", None)
        if rows is not None:  # no Event per row
            count = fold_each_user(rows.read_rows_by_user(), itemgetter(2),
                                   row_fold(rows.row_event), done, upcast, progress)  # fmt: skip
        elif callable(by_user):
            count = fold_each_user(by_user(), attrgetter("user_id"), UserMemory.apply, done,
                                   upcast, progress)  # fmt: skip
        else:  # the in-memory store, which holds every event already
            memories, count = fold_all(self.store.read_all(), upcast, progress)
            for memory in memories.values():
                done(memory)
        # the caches start over: each user's projection is folded from the log when read
        self.projections.reset()
        log.info("projections rebuilt", extra={"users": users, "events": count})
        return RebuildReport(users=users, events=count, facts=facts,
                             seconds=time.perf_counter() - start)  # fmt: skip
