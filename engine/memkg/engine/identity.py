"""The memory switch and merged ids, wired (the views are ``memkg.identity``).

Switch events and merge links are appended to the users' own streams through
``Journal.unguarded``, beside the write guard (``Journal.writable``) every other write passes;
each append drops the cached views it changes, so the next read folds them anew. A merge is two
steps, so nothing merges on a guess: ``merge_users`` without ``confirm`` records a proposal and
returns its ``merge_id``; ``merge_users(..., confirm=merge_id)`` merges. Erasing any id of a
person erases them all (``Eraser``, with ``person_ids`` and ``erasure_reach`` here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from memkg.arbitration import Outcome, ReviewStatus
from memkg.arbitration.claims import slot
from memkg.arbitration.review import frozen_payload, reviews_from
from memkg.clock import Clock
from memkg.engine.journal import Journal
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_args
from memkg.errors import InvalidOperation, MemoryDisabled, NotFound
from memkg.events.retry import retry_conflicts
from memkg.events.store import EventStore
from memkg.identity import Links, fold_links, merges_from, switch_state, visible
from memkg.lifecycle.erasure import ErasureReceipt
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import LIVE_STATUSES, Identifier
from memkg.model.identity import MemoryState, Merge, MergeStatus, SwitchMode

LinksOf = Callable[[str], Links]
"""``user_id → Links``: the merges the user's own stream records."""


class SwitchReceipt(BaseModel):
    """What turning memory off or on did: the state of each id, and the erasure if any."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    states: tuple[MemoryState, ...]
    erasure: ErasureReceipt | None = None


def links_in(store: EventStore) -> LinksOf:
    """The links each user's own stream in ``store`` records."""
    return lambda user_id: fold_links(user_id, store.read_stream(user_id))


def person_ids(links: LinksOf, user_id: str) -> list[str]:
    """The ids merged into one person with ``user_id`` (itself first): the primary and every
    id either stream records as merged into it, agreed by the other side or not."""
    mine = links(user_id)
    into = mine.merged_into
    root = into.primary if into is not None else user_id
    found = [
        user_id,
        root,
        *(m.other for m in links(root).others),
        *(m.other for m in mine.others),
    ]
    return list(dict.fromkeys(found))


def erasure_reach(links: LinksOf, user_id: str) -> list[str]:
    """Every id whose views an erasure of ``user_id`` touches: the person's ids, then ids
    once merged with them (since split); an id only proposed for a merge never read them."""
    ids = person_ids(links, user_id)
    linked = {party for one in ids for merge in links(one).merges.values()
              if merge.status is not MergeStatus.PROPOSED
              for party in (merge.primary, merge.other)}  # fmt: skip
    return [*ids, *sorted(linked - set(ids))]


def _mode(mode: str | SwitchMode) -> SwitchMode:
    try:
        return SwitchMode(mode)
    except ValueError:
        raise InvalidOperation(
            f"mode {mode!r} is not one of keep, erase: keep freezes memory as it is, erase "
            "erases it", code="memory.mode",
        ) from None  # fmt: skip


def _words(by: str, reason: str) -> None:
    if not by.strip() or len(by) > 128 or len(reason) > 500:
        raise InvalidOperation(
            "give who asked (`by`, 1-128 characters) and a reason of at most 500 characters",
            code="memory.by",
        )


@dataclass(eq=False, repr=False)
class MemorySwitch:
    """The user's memory switch, off (kept or erased) and on; see ``memkg.Engine``."""

    store: EventStore
    journal: Journal
    clock: Clock
    lock: threading.RLock
    erase: Callable[..., ErasureReceipt]
    """``Eraser.erase``: the switch's events go in the erasure's transaction (``then``)."""

    def memory_state(self, user_id: str) -> MemoryState:
        """Whether memory is on for the user, and how and since when it was turned off.

        A stream that never held a switch (or link) event, as the user's folded memory
        knows, is on: the stream is read only for those that did (it was read whole for
        every user, a cost that grew with each one's history)."""
        check_args(user_id=user_id)
        if self.journal.projections.memory(user_id).plain:
            return MemoryState(user_id=user_id, enabled=True)
        return switch_state(user_id, self.store.read_stream(user_id))

    def _event(self, user_id: str, kind: EventType, payload: dict[str, Any]) -> NewEvent:
        """One switch event for the user's own stream."""
        return NewEvent(event_id=self.clock.new_id("evt"), type=kind, user_id=user_id,
                        domain=None, payload=payload, recorded_at=self.clock.now())  # fmt: skip

    def disable_memory(
        self, user_id: str, *, mode: str | SwitchMode = "keep", by: str = "user",
        reason: str = "",
    ) -> SwitchReceipt:  # fmt: skip
        """Turn memory off: writes are refused (``memory.disabled``), reads see only role
        defaults, decisions record that they ran without memory. ``mode="keep"`` freezes
        what is stored; ``mode="erase"`` erases it (the receipt is in the answer).

        The user and every id merged with them go off; the erased stream holds only the
        switch event, with no personal data: the mode and the erasure's id. Turning it off
        again in the same mode changes nothing.
        """
        check_args(user_id=user_id, by=by, reason=reason)
        chosen = _mode(mode)
        _words(by, reason)
        with self.lock:
            now = self.memory_state(user_id)
            if not now.enabled and (now.mode is chosen or now.mode is SwitchMode.ERASE):
                return SwitchReceipt(states=(now,))
            ids = tuple(person_ids(links_in(self.store), user_id))
            if chosen is SwitchMode.KEEP:  # every id goes off in one commit
                self.journal.unguarded([
                    (one, [self._event(one, EventType.MEMORY_DISABLED, {
                        "mode": chosen.value, "by": by, "reason": reason,
                        "with": [i for i in ids if i != one]})])
                    for one in ids
                ])  # fmt: skip
                return SwitchReceipt(states=tuple(self.memory_state(i) for i in ids))

            def switched(erasure_id: str) -> list[tuple[str, list[NewEvent]]]:
                payload = {"mode": chosen.value, "erasure_id": erasure_id}
                return [(one, [self._event(one, EventType.MEMORY_DISABLED, payload)])
                        for one in ids]  # fmt: skip

            # the switch events are written in the erasure's own transaction: a write from
            # another process lands before both (erased) or after both (refused)
            receipt = self.erase(user_id, then=switched)
            states = tuple(self.memory_state(i) for i in ids)
            return SwitchReceipt(states=states, erasure=receipt)

    def enable_memory(self, user_id: str, *, by: str = "user", reason: str = "") -> SwitchReceipt:
        """Turn memory back on (an event): kept memory is read again, erased memory starts
        empty. Ids whose memory went off together with this one (merged ids, ``keep``) come
        back too, while they are one person still (ids split since are two people: each
        comes back on its own)."""
        check_args(user_id=user_id, by=by, reason=reason)
        _words(by, reason)
        with self.lock:
            events = self.store.read_stream(user_id)
            now = switch_state(user_id, events)
            if now.enabled:
                return SwitchReceipt(states=(now,))
            last = next(e for e in reversed(events) if e.seq == now.seq)
            linked = person_ids(links_in(self.store), user_id)
            ids = (user_id, *(one for one in last.payload.get("with", ()) if one in linked))
            payload = {"by": by, "reason": reason}
            self.journal.unguarded([  # every id comes back in one commit
                (one, [self._event(one, EventType.MEMORY_ENABLED, payload)])
                for one in ids
                if not self.memory_state(one).enabled
            ])  # fmt: skip
            return SwitchReceipt(states=tuple(self.memory_state(one) for one in ids))


# -- one person, several ids ----------------------------------------------------------------


_USER_ID: TypeAdapter[str] = TypeAdapter(Identifier)
"""What a user id is: as on a fact (``Observation.user_id``)."""


def _merge_words(primary: str, other: str, by: str, reason: str) -> None:
    for name, user in (("primary", primary), ("other", other)):
        try:
            _USER_ID.validate_python(user)
        except ValidationError:
            raise InvalidOperation(
                f"{name} {user!r:.60} is not a user id: 1-128 letters, digits and _ . : @ -, "
                "starting with a letter or digit (as on a fact)", code="merge.user_id",
            ) from None  # fmt: skip
    if primary == other:
        raise InvalidOperation(f"{primary!r} cannot be merged with itself: give two ids",
                               code="merge.same")  # fmt: skip
    if not by.strip() or len(by) > 128 or not reason.strip() or len(reason) > 500:
        raise InvalidOperation(
            "a merge names who asked (`by`, 1-128 characters) and why (`reason`, 1-500 "
            "characters): nothing merges on a guess", code="merge.reason",
        )  # fmt: skip


def _mergeable(mine: Links, theirs: Links, primary: str, other: str) -> None:
    """Why the two ids cannot be merged, if they cannot (nothing is written then)."""
    into = mine.merged_into
    if into is not None and into.primary == other:
        raise InvalidOperation(
            f"{primary!r} is merged into {other!r} already: to make {primary!r} the primary, "
            "split them first", code="merge.conflict",
        )  # fmt: skip
    if into is not None:
        raise InvalidOperation(
            f"{primary!r} is merged into {into.primary!r}: merge {other!r} into "
            f"{into.primary!r} instead", code="merge.conflict",
        )  # fmt: skip
    held = theirs.merged_into
    if held is not None and held.primary != primary:
        raise InvalidOperation(
            f"{other!r} is merged into {held.primary!r} already: split them first",
            code="merge.conflict",
        )  # fmt: skip
    if theirs.others:
        raise InvalidOperation(
            f"{other!r} has ids merged into it: merge {primary!r} into {other!r}, or split "
            "those first", code="merge.conflict",
        )  # fmt: skip


@dataclass(eq=False, repr=False)
class Identity:
    """Merges and splits of a person's ids; see ``memkg.Engine``."""

    setup: Setup
    store: EventStore
    projections: Projections
    journal: Journal
    clock: Clock
    lock: threading.RLock

    def _links(self, user_id: str) -> Links:
        return fold_links(user_id, self.store.read_stream(user_id))

    def merges(self, user_id: str) -> list[Merge]:
        """The merges the user's stream records (proposed, merged, split), oldest first."""
        check_args(user_id=user_id)
        return merges_from(user_id, self.store.read_stream(user_id))

    def _link_event(self, kind: EventType, user_id: str, merge: Merge) -> NewEvent:
        payload = {"merge_id": merge.merge_id, "primary": merge.primary, "other": merge.other,
                   "by": merge.by, "reason": merge.reason}  # fmt: skip
        return NewEvent(event_id=self.clock.new_id("evt"), type=kind, user_id=user_id,
                        domain=None, payload=payload, recorded_at=self.clock.now(),
                        fact_id=merge.merge_id)  # fmt: skip

    def merge_users(
        self, primary: str, other: str, *, by: str, reason: str, confirm: str | None = None
    ) -> Merge:
        """Two ids of one person, in two steps: without ``confirm`` a proposal is recorded and
        its ``merge_id`` returned (nothing joined); with ``confirm=merge_id`` the merge is
        made: reads and decisions of either id join both memories (arbitration runs over the
        joined claims) until ``split_users``; erasing either id erases both.

        Proposing the same pair again returns the proposal. Keys whose joined claims are in
        a strong conflict are frozen for review in the merge's append.
        """
        check_args(primary=primary, other=other, by=by, reason=reason, confirm=confirm)
        _merge_words(primary, other, by, reason)
        return self._checked(
            (primary, other),
            lambda versions: self._merge(primary, other, by, reason, confirm, versions),
        )

    def _checked(self, users: tuple[str, str], make: Callable[[dict[str, int]], Merge]) -> Merge:
        """``make`` given the ids' stream versions, read before it reads their links; made
        again on the fresh streams when another writer moved one before its commit (the
        commit expects those versions), so two processes never both act on one old check.
        Retried as an unconditional write is (``EngineConfig.write_retries``, jittered
        pauses, the lock let go between attempts)."""

        def attempt() -> Merge:
            with self.lock:
                return make({user: self.store.stream_version(user) for user in users})

        return retry_conflicts(attempt, retries=self.setup.config.write_retries)

    def _merge(
        self, primary: str, other: str, by: str, reason: str, confirm: str | None,
        versions: dict[str, int],
    ) -> Merge:  # fmt: skip
        for user in (primary, other):
            if self.projections.memory(user).memory_off is not None:
                raise MemoryDisabled(user)
        mine, theirs = self._links(primary), self._links(other)
        _mergeable(mine, theirs, primary, other)
        if confirm is None:
            return self._propose(mine, primary, other, by, reason, versions)
        proposed = mine.merges.get(confirm) or theirs.merges.get(confirm)
        if proposed is None or (proposed.primary, proposed.other) != (primary, other):
            raise NotFound(
                f"no proposal {confirm!r} to merge {other!r} into {primary!r}: propose "
                "first (merge_users without confirm), then confirm with the merge_id it "
                "returns", code="merge.not_proposed",
            )  # fmt: skip
        if proposed.status is MergeStatus.SPLIT:
            raise InvalidOperation(f"merge {confirm} was split: propose the merge again",
                                   code="merge.closed")  # fmt: skip
        update = {"status": MergeStatus.MERGED, "by": by, "reason": reason,
                  "at": self.clock.now()}  # fmt: skip
        merge = proposed.model_copy(update=update)
        if mine.holds(merge) and theirs.holds(merge):
            return mine.merges[confirm]
        mine_events = [] if mine.holds(merge) else [
            self._link_event(EventType.USERS_MERGED, primary, merge),
            *self._joined_freezes(merge),
        ]  # fmt: skip
        theirs_events = [] if theirs.holds(merge) else [
            self._link_event(EventType.USERS_MERGED, other, merge)]  # fmt: skip
        self.journal.unguarded([(primary, mine_events), (other, theirs_events)], checked=versions)
        return merge

    def _propose(
        self, mine: Links, primary: str, other: str, by: str, reason: str,
        versions: dict[str, int],
    ) -> Merge:  # fmt: skip
        known = [m for m in mine.merges.values() if m.other == other
                 and m.status in (MergeStatus.PROPOSED, MergeStatus.MERGED)]  # fmt: skip
        if known:
            return known[0]
        merge = Merge(merge_id=self.clock.new_id("merge"), primary=primary, other=other,
                      status=MergeStatus.PROPOSED, by=by, reason=reason,
                      at=self.clock.now())  # fmt: skip
        self.journal.unguarded([(u, [self._link_event(EventType.MERGE_PROPOSED, u, merge)])
                                for u in (primary, other)], checked=versions)  # fmt: skip
        return merge

    def _joined_freezes(self, merge: Merge) -> list[NewEvent]:
        """``key.frozen`` events for the key slots the joined claims leave in a strong
        conflict (as a write does: a conflict between two ids of a person is a conflict, not
        an overwrite); read from the view the merge is about to make."""
        store, setup = self.store, self.setup
        head, now = store.head(), self.clock.now()
        payload = {"merge_id": merge.merge_id, "primary": merge.primary, "other": merge.other,
                   "by": merge.by, "reason": merge.reason}  # fmt: skip

        def read(user: str, up_to_seq: int | None = None) -> list[Event]:
            events = list(store.read_stream(user, up_to_seq=up_to_seq))
            if user in (merge.primary, merge.other):
                events.append(Event(event_id=f"pending-{user}", type=EventType.USERS_MERGED,
                                    user_id=user, domain=None, payload=payload,
                                    recorded_at=now, seq=head + 1 + (user == merge.other),
                                    version=store.stream_version(user) + 1))  # fmt: skip
            return events

        events = visible(merge.primary, read)
        graph = setup.new_graph(merge.primary)
        for event in events:
            graph.apply(event)
        reviews = list(reviews_from(events).values())
        still_open = {r.review_id for r in reviews if r.status is ReviewStatus.OPEN}
        found = []
        for domain, key in sorted({(f.domain, f.key) for f in graph.memory.facts.values()}):
            spec = setup.registry.spec(domain, key)
            if spec is None:
                continue
            live = [f for f in graph.memory.of_key(domain, key) if f.status in LIVE_STATUSES]
            slots = sorted({tuple(sorted(slot(f.context, spec.context).items())) for f in live})
            for items in slots:
                held = setup.reader.resolve_key(
                    live, graph.claim_signals, reviews, spec, now, user_id=merge.primary,
                    context=dict(items),
                )  # fmt: skip
                if held.outcome is not Outcome.FROZEN or held.review_id in still_open:
                    continue
                if held.context != dict(items):
                    continue  # only session claims bear the slot: the general one's read
                review_id = self.clock.new_id("review")
                found.append(NewEvent(
                    event_id=self.clock.new_id("evt"), type=EventType.KEY_FROZEN,
                    user_id=merge.primary, domain=domain,
                    payload=frozen_payload(review_id, held), recorded_at=now, fact_id=review_id,
                ))  # fmt: skip
        return found

    def split_users(self, primary: str, other: str, *, by: str, reason: str) -> Merge:
        """Undo a merge (an event in both streams): each id reads its own memory again."""
        check_args(primary=primary, other=other, by=by, reason=reason)
        _merge_words(primary, other, by, reason)
        return self._checked(
            (primary, other), lambda versions: self._split(primary, other, by, reason, versions)
        )

    def _split(
        self, primary: str, other: str, by: str, reason: str, versions: dict[str, int]
    ) -> Merge:
        mine, theirs = self._links(primary), self._links(other)
        held = [m for m in mine.merges.values() if m.other == other
                and (mine.holds(m) or theirs.holds(m))]  # fmt: skip
        if not held:
            raise NotFound(f"{other!r} is not merged into {primary!r}",
                           code="merge.not_found")  # fmt: skip
        merge = held[0].model_copy(update={"status": MergeStatus.SPLIT, "by": by,
                                           "reason": reason, "at": self.clock.now()})  # fmt: skip
        self.journal.unguarded([
            (u, [self._link_event(EventType.USERS_SPLIT, u, merge)] if links.holds(merge) else [])
            for u, links in ((primary, mine), (other, theirs))
        ], checked=versions)  # fmt: skip
        return merge
