"""Current memory: the fold of a user's events into facts, rebuildable at any log position.

The projection is disposable: ``UserMemory.from_events(store.read_stream(user))`` always gives
it back, and ``up_to_seq`` gives it *as of* any past position. Expiry of ``state`` facts is a
read-time view (``current(at=...)``) as well as an event (``fact.expired``) once swept, so a
read never shows an expired state even before the sweep ran.
"""

from __future__ import annotations

import gc
import heapq
import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from operator import attrgetter
from typing import Any, Protocol

from memkg.events.stored import change_new, changed, numbered, stored_fact
from memkg.model.event import Event, EventType, NewEvent, StoredRow, row_payload
from memkg.model.fact import (
    LIVE_STATUSES,
    Fact,
    FactStatus,
    Scope,
    read_supersede_reason,
    spent,
)

_LIVE = LIVE_STATUSES

FACT_BYTES = 650
"""What one folded fact holds in memory with its share of the key and live indexes
(measured with ``tracemalloc``; a test keeps the estimate within a factor of the count).
Most of it is the fact's own values: what facts repeat is shared (``events.stored``)."""


class Deferred(Protocol):
    """Superseded facts a memory holds unread (a snapshot's history, ``events.snapshot``):
    built only when something asks for the whole history."""

    order: list[str]
    """Every fact id of the memory when it was deferred, in the order the fold made them."""
    count: int
    """How many facts it holds."""
    nbytes: int
    """About how much memory it holds unread."""

    def facts(self) -> dict[str, Fact]:
        """Its facts by id, built (each call builds them anew)."""
        ...

    def holds(self, fact_id: str) -> bool:
        """Whether ``fact_id`` names one of the memory's facts when it was deferred (built or
        not): an id no fact has (a review's, say) needs nothing built to be told apart."""
        ...


_UNUSED = nullcontext()
"""What a memory that never deferred facts holds as its build lock: nothing to take turns on."""


class UserMemory:
    """One user's facts (every status), as of the last event applied.

    A memory restored from a snapshot may hold its superseded history unread (``Deferred``):
    every fact that is not superseded is built, and the rest is built, in its place, the first
    time something reads ``facts`` whole, a fact not built (``fact``) or a key's history. What
    decisions and writes read (``live``, ``live_claims``, ``unsuperseded``, ``fact`` of a
    claim) never builds it, so a load costs the facts that can take part, not the history.
    """

    def __init__(self, user_id: str, upcast: Callable[[Fact], Fact] | None = None) -> None:
        self.user_id = user_id
        self.upcast = upcast
        """Reads a live fact stored under an old key version as the current one (a view)."""
        self._facts: dict[str, Fact] = {}
        self._deferred: Deferred | None = None
        self._building: AbstractContextManager[Any] = _UNUSED
        """Held while the memory builds its deferred facts, and while events are folded into
        it before they are built: a read that builds them (under no engine lock) and a write
        folding in take turns, so neither loses what the other put in place (a lock of its
        own from ``defer`` on)."""
        self.version = 0
        self.seq = 0
        self._by_key: dict[tuple[str, str], list[str]] = {}
        self._live: dict[tuple[str, str], dict[str, None]] = {}
        """Per key, the ids of its live facts: kept as events arrive, so a write reads its
        key's live claims without walking the key's history."""
        self._live_in = ByScope()
        """``_live`` split by scope: what ``live_claims_in`` reads, so a write reads its own
        scope's claims, not those of every session the user ever had."""
        self._bearing: dict[tuple[str, str], dict[str, None]] = {}
        """Per key, the ids of ``_by_key`` but the spent facts (``model.fact.spent``) and the
        history a restore left unread, in the same order: what ``bearing`` reads, so a read of
        a key after a write costs the claims a read can list, not the key's history."""
        self._bearing_in = ByScope()
        """``_bearing`` split by scope: what ``bearing_in`` reads, so a read in a session
        costs the key's long-term facts and the session's, not every session's."""
        self._unsuperseded: dict[str, None] = {}
        """The ids of the built facts that are not superseded, in the order of ``_facts``."""
        self._stale = True
        """``_bearing`` and ``_unsuperseded`` are to be worked out before they are next read,
        and not kept meanwhile: until the first read (a fold from the log or a rebuild keeps
        nothing it may never need), and after facts were handed over whole (a restore's, a
        rule case's)."""
        self.facts_read = 0
        """Facts handed out by the per-key reads (``of_key``, ``live_claims``) so far: what
        a read of one key cost, for tests and benchmarks to count."""
        self.on_built: Callable[[], None] | None = None
        """Called once a deferred history was built, after the build lets go of the memory
        (a build a fold needs runs inside the fold, and calls it there): the cache holding
        the memory measures it again."""
        self.memory_off: dict[str, Any] | None = None
        """The ``memory.disabled`` payload while the user's memory is off, else ``None``."""
        self._links: dict[str, tuple[str, str]] = {}
        self.plain = True
        """No switch or link event was folded: the user's own stream is the whole view."""

    @property
    def facts(self) -> dict[str, Fact]:
        """Every fact by id, in the order the fold made them (deferred ones built first)."""
        if self._deferred is not None:
            self._build_deferred()
        return self._facts

    @facts.setter
    def facts(self, facts: dict[str, Fact]) -> None:
        self._facts, self._deferred = facts, None
        self._stale = True

    def _reindex(self) -> None:
        """Work ``_bearing`` and ``_unsuperseded`` out again from the facts and ``_by_key``
        (facts handed over whole, a history built)."""
        self._stale = False
        facts, superseded = self._facts, FactStatus.SUPERSEDED
        self._unsuperseded = {i: None for i, f in facts.items() if f.status is not superseded}
        self._bearing = {
            slot: {i: None for i in ids if (f := facts.get(i)) is not None and not spent(f)}
            for slot, ids in self._by_key.items()
        }

    def defer(self, deferred: Deferred) -> None:
        """Hold ``deferred`` unread beside the facts built (a snapshot's restore)."""
        if self._deferred is not None:
            raise ValueError("a memory defers one history")
        self._building = threading.RLock()  # before the history: whoever sees one sees it
        self._deferred = deferred

    @property
    def deferred(self) -> Deferred | None:
        """The history held unread, if any."""
        return self._deferred

    def parts(self) -> tuple[dict[str, Fact], Deferred | None]:
        """The facts built and the history held unread, read together (a build running on
        another thread puts its facts in place and clears the history in two steps)."""
        with self._building:
            return self._facts, self._deferred

    @property
    def count(self) -> int:
        """How many facts the memory holds, built or not."""
        if self._deferred is None:
            return len(self._facts)
        with self._building:  # not between a build's two assignments
            deferred = self._deferred
            return len(self._facts) + (deferred.count if deferred is not None else 0)

    @property
    def built(self) -> int:
        """How many of them are built (``count`` less the deferred ones)."""
        return len(self._facts)

    def fact(self, fact_id: str) -> Fact | None:
        """One fact by id; the deferred history is built only when it holds the fact."""
        deferred = self._deferred  # first: a build puts its facts in place, then clears it
        found = self._facts.get(fact_id)
        if found is None and deferred is not None and deferred.holds(fact_id):
            found = self.facts.get(fact_id)
        return found

    def unsuperseded(self, domain: str | None = None) -> list[Fact]:
        """Every fact of ``domain`` (or all) but the superseded ones, in the order of
        ``facts``: the deferred history is never read (it holds superseded facts only)."""
        if self._stale:
            self._reindex()
        facts = self._facts
        found = [f for i in self._unsuperseded if domain in (None, (f := facts[i]).domain)]
        self.facts_read += len(self._unsuperseded)
        return found

    def _build_deferred(self) -> None:
        with self._building:
            deferred = self._deferred
            if deferred is None:
                return  # another reader built them meanwhile
            later, built = deferred.facts(), self._facts
            merged: dict[str, Fact] = {}
            for fact_id in deferred.order:
                fact = built.get(fact_id)
                if fact is None:
                    fact = later.get(fact_id)
                if fact is not None:
                    merged[fact_id] = fact
            for fact_id, fact in built.items():  # folded since the restore
                if fact_id not in merged:
                    merged[fact_id] = fact
            self._facts = merged
            self._deferred = None
            self._stale = True  # the indexes are worked out again on their next read
        if (measure := self.on_built) is not None:
            measure()

    def _facts_for(self, kind: EventType, payload: Mapping[str, Any]) -> dict[str, Fact]:
        """The facts a status event's handler changes: the deferred history built first when
        the fact it names is not built, or when a confirmation makes a fact that does not
        hold hold again (a deferred fact is silent only while no such fact holds)."""
        deferred = self._deferred
        if deferred is not None and kind is not EventType.FACT_ASSERTED:
            fact_id = payload.get("fact_id") or ""
            fact = self._facts.get(fact_id)
            if (fact is None and deferred.holds(fact_id)) or (
                kind is EventType.FACT_CONFIRMED and fact is not None and fact.status not in _LIVE
            ):
                self._build_deferred()
        return self._facts

    @classmethod
    def from_events(
        cls, user_id: str, events: Iterable[Event], upcast: Callable[[Fact], Fact] | None = None
    ) -> UserMemory:
        memory = cls(user_id, upcast)
        with collector_paused():
            for event in events:
                memory.apply(event)
        return memory

    def apply(self, event: Event, asserted: Fact | None = None) -> None:
        """Fold one event in; events of other users are a caller bug.

        ``asserted``: for a ``fact.asserted`` event, its fact as ``asserted_facts`` read it
        from the payload the event was appended with, whatever seq it was read with: taken,
        numbered ``event.seq``, instead of reading the stored payload again."""
        if event.user_id != self.user_id:
            raise ValueError(f"event {event.event_id} is about another user")
        if self._deferred is not None:
            with self._building:
                self._apply(event, asserted)
        else:  # nothing can build deferred facts meanwhile: none are held
            self._apply(event, asserted)

    def _apply(self, event: Event, asserted: Fact | None) -> None:
        if asserted is not None and event.type is EventType.FACT_ASSERTED:
            fact = self._facts[asserted.id] = numbered(asserted, event.seq)
            self._folded(fact, EventType.FACT_ASSERTED)
            self.version, self.seq = event.version, event.seq
            return
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            facts = self._facts_for(event.type, event.payload)
            fact = handler(facts, event.payload, event.seq, changed)
            if fact is not None:
                self._folded(fact, event.type)
        elif event.type in _IDENTITY:
            self._identity(event)
        self.version, self.seq = event.version, event.seq

    def fold_rows(self, rows: Iterable[StoredRow], row_event: Callable[[StoredRow], Event]) -> None:
        """Fold stored rows in (``events.store.RowStream``): the state ``apply`` leaves after
        their events, building no ``Event`` (``row_event`` builds the rare one a fold reads
        whole: a switch or link event). Into an empty memory, a status change lands on the
        fact the same fold built, which no one holds yet (``change_new``), not on a copy."""
        change = change_new if not self._facts and self._deferred is None else changed
        with collector_paused(), self._building:
            for row in rows:
                self.fold_row(row, row_event, change)

    def fold_row(
        self, row: StoredRow, row_event: Callable[[StoredRow], Event], change: Change = changed
    ) -> None:
        """Fold one stored row in (``fold_rows``); ``change_new`` as ``change`` only while no
        one else holds the facts this memory folded."""
        if row[2] != self.user_id:
            raise ValueError(f"event {row[1]} is about another user")
        kind = _ROW_TYPES.get(row[4])
        if kind is None or kind in _IDENTITY:
            self.apply(row_event(row))
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            payload = row_payload(row)
            fact = handler(self._facts_for(kind, payload), payload, row[0], change)
            if fact is not None:
                self._folded(fact, kind)
        self.version, self.seq = row[3], row[0]

    def _folded(self, fact: Fact, kind: EventType) -> None:
        """Index the fact an event just made or changed: its key, its liveness."""
        fact_id = fact.id
        slot = (fact.domain, fact.key)
        if kind is EventType.FACT_ASSERTED:
            if (asserted := self._by_key.get(slot)) is None:
                self._by_key[slot] = [fact_id]
            else:
                asserted.append(fact_id)
        if not self._stale:
            self._index(fact, slot, kind)
        live = self._live.get(slot)
        if fact.status not in _LIVE:
            if live is not None:
                live.pop(fact_id, None)
        elif live is None:
            self._live[slot] = {fact_id: None}
        else:
            live[fact_id] = None
        if fact.status in _LIVE:
            self._live_in.add(self._live, slot, fact)
        else:
            self._live_in.drop(self._live, slot, fact)

    def _index(self, fact: Fact, slot: tuple[str, str], kind: EventType) -> None:
        """Keep ``_bearing`` and ``_unsuperseded`` as the fact an event just made or changed
        leaves them: a new fact joins both at the end (the order of ``_by_key`` and
        ``_facts``), a superseded one leaves them, and for good."""
        fact_id = fact.id
        if kind is EventType.FACT_ASSERTED:
            self._bearing.setdefault(slot, {})[fact_id] = None
            self._bearing_in.add(self._bearing, slot, fact)
        if fact.status is FactStatus.SUPERSEDED:
            self._unsuperseded.pop(fact_id, None)
            bearing = self._bearing.get(slot)
            if spent(fact) and bearing is not None:
                bearing.pop(fact_id, None)
                self._bearing_in.drop(self._bearing, slot, fact)
            elif bearing is None or fact_id not in bearing:
                self._stale = True  # superseded again, by a change (no command does)
        elif fact_id not in self._unsuperseded:
            if kind is EventType.FACT_ASSERTED:
                self._unsuperseded[fact_id] = None
            else:
                self._stale = True  # superseded no more (no command does)

    def _identity(self, event: Event) -> None:
        self.plain = False
        payload = event.payload
        if event.type is EventType.MEMORY_DISABLED:
            self.memory_off = dict(payload)
        elif event.type is EventType.MEMORY_ENABLED:
            self.memory_off = None
        elif event.type is EventType.USERS_MERGED:
            self._links[payload["merge_id"]] = (payload["primary"], payload["other"])
        elif event.type is EventType.USERS_SPLIT:
            self._links.pop(payload["merge_id"], None)

    def settle(self, version: int) -> None:
        """Take the version just read from the store after a fold: it is the store's, which a
        purge leaves past the last event; or the last event's, when the plain stream was read
        after a write the version read before it did not count yet (the next read's tail
        starts after it)."""
        self.version = max(version, self.version) if self.plain else version

    @property
    def merged_ids(self) -> tuple[str, ...]:
        """The other ids of the same person whose memory this view joins, sorted."""
        ids = {i for pair in self._links.values() for i in pair}
        return tuple(sorted(ids - {self.user_id}))

    def estimated_bytes(self) -> int:
        """About how much memory the projection holds (what a memory bound counts)."""
        deferred = self._deferred
        return 1_000 + FACT_BYTES * len(self._facts) + (deferred.nbytes if deferred else 0)

    def current(self, domain: str | None = None, at: datetime | None = None) -> list[Fact]:
        """Facts that hold now: active, pending confirmation or frozen; states not yet expired.

        With ``upcast``, a fact stored under an old key version reads as the current one;
        ``facts`` and ``history`` keep what the log holds.
        """
        return self._holding(self.live(domain), at)

    def current_in(
        self, domain: str | None, session_id: str | None, at: datetime | None = None
    ) -> list[Fact]:
        """``current`` but what reads in ``session_id``'s session (or, for ``None``, outside
        every session) take part in: the long-term facts and the session's notes; not another
        session's notes, nor turn instructions (an instruction counts in its turn alone, and
        its value lives on in the session's note). Read key by key from the live index split
        by scope, so the cost is those facts and the user's keys, not every session's
        notes."""
        facts = self._facts  # every live fact is built
        if not self._live and facts:  # given its facts without folding (a rule case's)
            found = [f for f in self.live(domain) if _in_session(f, session_id)]
            return self._holding(found, at)
        found = []
        for slot in self._live:
            if domain not in (None, slot[0]):
                continue
            scopes = self._live_in.scopes(self._live, slot, facts)
            found.extend(facts[i] for i in scopes.get(None, _NO_IDS))
            if session_id is not None:
                found.extend(facts[i] for i in scopes.get(session_id, _NO_IDS)
                             if facts[i].scope is Scope.SESSION)  # fmt: skip
        return self._holding(found, at)

    def _holding(self, facts: Iterable[Fact], at: datetime | None) -> list[Fact]:
        """``facts`` but states expired at ``at``, upcast, by domain, key and id."""
        found = []
        for fact in facts:
            if at is not None and fact.valid_until is not None and fact.valid_until <= at:
                continue
            found.append(fact if self.upcast is None else self.upcast(fact))
        return sorted(found, key=lambda f: (f.domain, f.key, f.id))

    def live(self, domain: str | None = None) -> list[Fact]:
        """The facts that hold (``LIVE_STATUSES``) of ``domain``, or all, oldest first (by
        seq, then id): read from the live index, so the cost is the live facts, not the
        history. A memory given its facts without folding them (a rule case's) is scanned."""
        facts = self._facts  # every live fact is built
        if self._live or not facts:
            ids = (i for (d, _), held in self._live.items() if domain in (None, d) for i in held)
            found = [facts[i] for i in ids]
        else:
            found = [f for f in facts.values()
                     if f.status in _LIVE and domain in (None, f.domain)]  # fmt: skip
        return sorted(found, key=lambda f: (f.seq, f.id))

    def history(self, key: str, domain: str | None = None) -> list[Fact]:
        """Every fact ever stored for ``key``, oldest first, with its final status."""
        slots = [(d, k) for d, k in self._by_key if k == key and domain in (None, d)]
        found = [f for slot in slots for f in self.of_key(*slot)]
        return sorted(found, key=lambda f: (f.seq, f.id))

    def of_key(self, domain: str, key: str) -> list[Fact]:
        """Every fact of one key, whatever its status, in the order they were asserted."""
        found = [self.facts[i] for i in self._by_key.get((domain, key), ()) if i in self.facts]
        self.facts_read += len(found)
        return found

    def bearing(self, domain: str, key: str) -> list[Fact]:
        """``of_key`` but the spent facts (``model.fact.spent``) and the deferred history: the
        facts of the key a read can tell apart (the facts a restore left unread are silent:
        ``arbitration.claims.silent``), read from an index kept as events arrive."""
        if self._stale:
            self._reindex()
        facts = self._facts
        found = [facts[i] for i in self._bearing.get((domain, key), ()) if i in facts]
        self.facts_read += len(found)
        return found

    def bearing_in(self, domain: str, key: str, session_id: str | None) -> list[Fact]:
        """``bearing`` but the facts no read in ``session_id``'s session (or, for ``None``,
        outside every session) can weigh: the key's long-term facts and that session's
        (``claim_scope``), in the order of ``bearing`` (the order they were asserted). The
        cost is those facts, however many sessions the key has facts in."""
        found = self._bearing_of(domain, key, session_id)
        self.facts_read += len(found)
        return found

    def _bearing_of(self, domain: str, key: str, session_id: str | None) -> list[Fact]:
        scopes, facts = self._scopes(domain, key), self._facts
        found = [facts[i] for i in scopes.get(None, ()) if i in facts]
        if session_id is not None and (ids := scopes.get(session_id)):
            mine = [facts[i] for i in ids if i in facts]
            found = list(heapq.merge(found, mine, key=attrgetter("seq")))
        return found

    def unsuperseded_in(
        self, domain: str, keys: Iterable[str], session_id: str | None
    ) -> list[Fact]:
        """``unsuperseded(domain)`` but the facts of ``keys`` alone that a read in
        ``session_id``'s session (or outside every session) can weigh (``bearing_in``), in
        the same order (the order they were asserted)."""
        if not self._by_key and self._facts:  # given its facts without folding (a rule case's)
            read, wanted = (None, session_id), set(keys)
            return [f for f in self.unsuperseded(domain)
                    if f.key in wanted and claim_scope(f.scope, f.session_id) in read]  # fmt: skip
        superseded = FactStatus.SUPERSEDED
        found = [f for key in keys for f in self._bearing_of(domain, key, session_id)
                 if f.status is not superseded]  # fmt: skip
        found.sort(key=attrgetter("seq"))
        self.facts_read += len(found)
        return found

    def bears_in_session(self, domain: str, key: str, session_id: str) -> bool:
        """Whether ``bearing`` holds facts of the key of ``session_id``'s scope (its notes and
        turn instructions)."""
        return session_id in self._scopes(domain, key)

    def reading_session(
        self, domain: str, keys: Iterable[str], session_id: str | None
    ) -> str | None:
        """The session whose facts a read of ``keys`` in ``session_id``'s session weighs:
        ``session_id`` when it holds a fact of one of them, else ``None`` (the read weighs the
        long-term facts alone, as one outside every session does, and shares what that one
        keeps)."""
        if session_id is None or any(self.bears_in_session(domain, k, session_id) for k in keys):
            return session_id
        return None

    def _scopes(self, domain: str, key: str) -> dict[str | None, dict[str, None]]:
        """The key's ids in ``_bearing``, by scope (``_bearing_in``)."""
        if self._stale:
            self._reindex()
        return self._bearing_in.scopes(self._bearing, (domain, key), self._facts)

    def skips(self, domain: str, key: str) -> bool:
        """Whether the key holds facts ``bearing`` leaves out (spent ones, or a history held
        unread): facts of global scope without context, which give the key its general
        slot though no read lists them."""
        if self._stale:
            self._reindex()
        return len(self._by_key.get((domain, key), ())) > len(self._bearing.get((domain, key), ()))

    def live_claims(self, domain: str, key: str) -> list[Fact]:
        """The key's facts that hold (``LIVE_STATUSES``), in the order they were asserted:
        read from the live index, so the cost is the key's live claims, not its history."""
        facts = self._facts  # every live fact is built
        found = sorted((facts[i] for i in self._live.get((domain, key), ())),
                       key=lambda f: (f.seq, f.id))  # fmt: skip
        self.facts_read += len(found)
        return found

    def live_ids(self, domain: str, key: str) -> Container[str]:
        """The ids of the key's live facts (``live_claims``), to test membership in (not to
        change)."""
        return self._live.get((domain, key), _NO_IDS)

    def live_claims_in(
        self, domain: str, key: str, scope: Scope, session_id: str | None
    ) -> list[Fact]:
        """``live_claims`` of one scope (``claim_scope``): the key's long-term claims (of
        ``Scope.GLOBAL``, whatever their session), or those of ``session_id``'s session and
        turns. The cost is the claims of that scope, however many sessions the key has
        claims in."""
        found = self.live_in(domain, key, scope, session_id)
        self.facts_read += len(found)
        return found

    def live_in(self, domain: str, key: str, scope: Scope, session_id: str | None) -> list[Fact]:
        """``live_claims_in``, but not counted in ``facts_read`` (what a decision's view of
        the graph reads, as ``live`` is not); a memory given its facts without folding them
        (a rule case's) is scanned."""
        where = claim_scope(scope, session_id)
        if not self._live and self._facts:
            return sorted((f for f in self._facts.values()
                           if f.status in _LIVE and f.domain == domain and f.key == key
                           and claim_scope(f.scope, f.session_id) == where),
                          key=lambda f: (f.seq, f.id))  # fmt: skip
        facts = self._facts  # every live fact is built
        ids = self._live_in.scopes(self._live, (domain, key), facts).get(where, _NO_IDS)
        return sorted((facts[i] for i in ids), key=lambda f: (f.seq, f.id))


_NO_IDS: dict[str, None] = {}


class ByScope:
    """An index of fact ids per key (``UserMemory._live``, ``_bearing``) split by scope
    (``claim_scope``): worked out key by key, when a key is first read, then kept as events
    arrive (a scope left with no id is dropped). A split holds for the index it was worked
    out of; another in its place (a restore's, an index worked out again) starts over."""

    __slots__ = ("_index", "_keys")

    def __init__(self) -> None:
        self._index: object = None
        self._keys: dict[tuple[str, str], dict[str | None, dict[str, None]]] = {}

    def scopes(
        self, index: Mapping[tuple[str, str], Iterable[str]], slot: tuple[str, str],
        facts: Mapping[str, Fact],
    ) -> dict[str | None, dict[str, None]]:  # fmt: skip
        """The key's ids in ``index`` by scope, in their order there (``facts``: by id)."""
        if self._index is not index:
            self._index, self._keys = index, {}
        found = self._keys.get(slot)
        if found is None:
            found = {}
            for i in index.get(slot, ()):
                if (fact := facts.get(i)) is not None:
                    found.setdefault(claim_scope(fact.scope, fact.session_id), {})[i] = None
            self._keys[slot] = found  # kept once whole (readers hold the engine's lock)
        return found

    def add(self, index: object, slot: tuple[str, str], fact: Fact) -> None:
        """``fact`` joined the key's ids in ``index`` (at their end)."""
        if self._index is index and (found := self._keys.get(slot)) is not None:
            found.setdefault(claim_scope(fact.scope, fact.session_id), {})[fact.id] = None

    def drop(self, index: object, slot: tuple[str, str], fact: Fact) -> None:
        """``fact`` left the key's ids in ``index``."""
        if self._index is index and (found := self._keys.get(slot)) is not None:
            where = claim_scope(fact.scope, fact.session_id)
            if (held := found.get(where)) is not None:
                held.pop(fact.id, None)
                if not held:
                    del found[where]


def _in_session(fact: Fact, session_id: str | None) -> bool:
    """Whether reads in ``session_id``'s session take ``fact`` in (``current_in``): the rule
    of ``arbitration.claims.tier_of`` with no turn current, which it cannot import from here
    (``tests/unit/arbitration/test_session_rule.py`` holds the two together)."""
    if fact.scope is Scope.GLOBAL:
        return True
    return fact.scope is Scope.SESSION and session_id is not None and fact.session_id == session_id


def claim_scope(scope: Scope, session_id: str | None) -> str | None:
    """Which claims a write of ``scope`` in ``session_id`` can meet: ``None``, the long-term
    ones (a claim of ``Scope.GLOBAL`` counts in every read, whatever its session); else the
    session's (its notes and turn instructions, which count only there)."""
    return None if scope is Scope.GLOBAL else (session_id or "")


def preview(
    facts: Iterable[Fact],
    events: Iterable[NewEvent],
    after_seq: int,
    asserted: Mapping[str, Fact] | None = None,
) -> list[Fact]:
    """``facts`` as they will be once ``events`` are stored (numbered after ``after_seq``),
    storing nothing: what a write is about to do, for checks that go in the same append.

    ``asserted``: the facts of the ``fact.asserted`` events, by event id, as
    ``asserted_facts`` read them (the payloads are not read again)."""
    table = {f.id: f for f in facts}
    for offset, event in enumerate(events, 1):
        if asserted is not None and (fact := asserted.get(event.event_id)) is not None:
            table[fact.id] = numbered(fact, after_seq + offset)
        elif (handler := _HANDLERS.get(event.type)) is not None:
            handler(table, event.payload, after_seq + offset, changed)
    return list(table.values())


def asserted_facts(events: Iterable[NewEvent], after_seq: int) -> dict[str, Fact]:
    """The fact of each ``fact.asserted`` event among ``events``, by event id, read from its
    payload once and numbered as ``preview`` numbers it: for the checks a write goes through
    (``preview``) and for the fold of the appended events (``UserMemory.apply``), which
    number it again as they need."""
    return {
        event.event_id: stored_fact(event.payload["fact"], after_seq + offset)
        for offset, event in enumerate(events, 1)
        if event.type is EventType.FACT_ASSERTED
    }


def fold_all(
    events: Iterable[Event],
    upcast: Callable[[Fact], Fact] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, UserMemory], int]:
    """Every user's memory folded from ``events`` (the whole log, in order), and their count.

    ``progress`` is called with the number of events applied so far, every 1,000.

    The fold builds many long-lived objects and frees almost none, so the cyclic collector,
    run every few hundred allocations, would re-scan what the fold keeps for nothing: it is
    paused for the fold (about half the time of a rebuild otherwise).
    """
    return _fold_log(events, attrgetter("user_id"), UserMemory.apply, upcast, progress)


def fold_each_user(
    items: Iterable[Any],
    user_of: Callable[[Any], str],
    fold: Callable[[UserMemory, Any], None],
    done: Callable[[UserMemory], None],
    upcast: Callable[[Fact], Fact] | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """The log given user after user, each user's events or rows in stream order, folded one
    user at a time: ``done`` is handed each user's memory once folded, which is then let go,
    so a fold of the whole log holds one user's memory, not every user's. The number of items
    folded; ``progress`` as for ``fold_all``, with the collector paused as there."""
    count = 0
    memory: UserMemory | None = None
    with collector_paused():
        for item in items:
            user_id = user_of(item)
            if memory is None or memory.user_id != user_id:
                if memory is not None:
                    done(memory)
                memory = UserMemory(user_id, upcast)
            fold(memory, item)
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(count)
        if memory is not None:
            done(memory)
    return count


def row_fold(row_event: Callable[[StoredRow], Event]) -> Callable[[UserMemory, StoredRow], None]:
    """How ``fold_each_user`` folds a stored row (``events.store.RowStream``): with no
    ``Event`` built per row. Every memory is new and held by no one while the fold runs, so a
    status change lands on the fact the fold built (``change_new``)."""

    def fold(memory: UserMemory, row: StoredRow) -> None:
        memory.fold_row(row, row_event, change_new)

    return fold


def _fold_log(
    items: Iterable[Any],
    user_of: Callable[[Any], str],
    fold: Callable[[UserMemory, Any], None],
    upcast: Callable[[Fact], Fact] | None,
    progress: Callable[[int], None] | None,
) -> tuple[dict[str, UserMemory], int]:
    """Each item of the log folded into its user's memory, with the collector paused."""
    memories: dict[str, UserMemory] = {}
    count = 0
    with collector_paused():
        for item in items:
            user_id = user_of(item)
            memory = memories.get(user_id)
            if memory is None:
                memory = memories[user_id] = UserMemory(user_id, upcast)
            fold(memory, item)
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(count)
    return memories, count


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block, as it was before afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_IDENTITY = frozenset({EventType.MEMORY_DISABLED, EventType.MEMORY_ENABLED,
                       EventType.MERGE_PROPOSED, EventType.USERS_MERGED,
                       EventType.USERS_SPLIT})  # fmt: skip
_ROW_TYPES = {t.value: t for t in EventType}
"""An event type by the text a stored row holds."""


Change = Callable[[Fact, dict[str, Any]], Fact]
"""How a status change makes the changed fact: ``changed`` (a new value), or ``change_new``
(in place, for a fact the running fold built)."""


def _asserted(facts: dict[str, Fact], payload: dict[str, Any], seq: int, _change: Change) -> Fact:
    fact = stored_fact(payload["fact"], seq)
    facts[fact.id] = fact
    return fact


def _status(status: FactStatus, reason_field: str | None = None) -> Any:
    def handle(
        facts: dict[str, Fact], payload: dict[str, Any], _seq: int, change: Change
    ) -> Fact | None:
        fact = facts.get(payload["fact_id"])
        if fact is None:
            return None  # purged by erasure of its audit id: nothing left to change
        changes: dict[str, Any] = {}
        if status is FactStatus.SUPERSEDED:
            reason, text = read_supersede_reason(payload)
            changes["supersede_reason"] = reason
            if text:
                changes["status_reason"] = text
        elif reason_field and payload.get(reason_field):
            changes["status_reason"] = payload[reason_field]
        if by := payload.get("by_fact_id"):
            later = facts.get(by)  # the text of its id, kept once
            changes["superseded_by"] = by if later is None else later.id
        changes["status"] = status
        facts[fact.id] = folded = change(fact, changes)
        return folded

    return handle


_HANDLERS = {
    EventType.FACT_ASSERTED: _asserted,
    EventType.FACT_CONFIRMED: _status(FactStatus.ACTIVE),
    EventType.FACT_SUPERSEDED: _status(FactStatus.SUPERSEDED, "reason"),
    EventType.FACT_RETRACTED: _status(FactStatus.RETRACTED, "reason"),
    EventType.FACT_EXPIRED: _status(FactStatus.EXPIRED, "reason"),
}
