"""The memory switch and merged ids, wired for ``Engine`` (the views are ``memkg.identity``).

Switch events and merge links are appended to the users' own streams here, beside the
write guard (``_writable``) every other write passes; each append drops the cached views it
changes, so the next read folds them anew. A merge is two steps, so nothing merges on a
guess: ``merge_users`` without ``confirm`` records a proposal and returns its ``merge_id``;
``merge_users(..., confirm=merge_id)`` merges. Erasing any id of a person erases them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from memkg.arbitration import Outcome, ReviewStatus
from memkg.arbitration.claims import slot
from memkg.arbitration.review import frozen_payload, reviews_from
from memkg.errors import InvalidOperation, MemoryDisabled, NotFound
from memkg.events.store import Companion
from memkg.identity import Links, fold_links, merges_from, switch_state, visible
from memkg.lifecycle.erasure import ErasureReceipt
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import LIVE_STATUSES
from memkg.model.identity import MemoryState, Merge, MergeStatus, SwitchMode

if TYPE_CHECKING:
    from memkg.engine import Engine


class SwitchReceipt(BaseModel):
    """What turning memory off or on did: the state of each id, and the erasure if any."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    states: tuple[MemoryState, ...]
    erasure: ErasureReceipt | None = None


def memory_state(engine: Engine, user_id: str) -> MemoryState:
    return switch_state(user_id, engine.store.read_stream(user_id))


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


def _append(engine: Engine, user_id: str, kind: EventType, payload: dict[str, Any]) -> None:
    """One switch event in the user's own stream; every view that reads the stream is dropped."""
    event = NewEvent(event_id=engine.clock.new_id("evt"), type=kind, user_id=user_id,
                     domain=None, payload=payload, recorded_at=engine.clock.now())  # fmt: skip
    engine.store.append(user_id, [event], expected_version=engine.store.stream_version(user_id))
    engine._forget_joined(user_id)
    engine._forget(user_id)


def disable_memory(
    engine: Engine, user_id: str, *, mode: str | SwitchMode = SwitchMode.KEEP,
    by: str = "user", reason: str = "",
) -> SwitchReceipt:  # fmt: skip
    """Turn memory off for the user and every id merged with them.

    ``keep``: memory is frozen as it is; ``erase``: it is erased first (as ``erase`` does) and
    the new stream holds only the switch event, with no personal data: the mode and the
    erasure's id. Turning it off again in the same mode changes nothing.
    """
    engine._check_args(user_id=user_id, by=by, reason=reason)
    chosen = _mode(mode)
    _words(by, reason)
    with engine._lock:
        now = memory_state(engine, user_id)
        if not now.enabled and (now.mode is chosen or now.mode is SwitchMode.ERASE):
            return SwitchReceipt(states=(now,))
        ids = tuple(person_ids(engine, user_id))
        if chosen is SwitchMode.KEEP:
            for one in ids:
                payload = {"mode": chosen.value, "by": by, "reason": reason,
                           "with": [i for i in ids if i != one]}  # fmt: skip
                _append(engine, one, EventType.MEMORY_DISABLED, payload)
            return SwitchReceipt(states=tuple(memory_state(engine, i) for i in ids))
        receipt = engine.erase(user_id)
        for one in ids:
            payload = {"mode": chosen.value, "erasure_id": receipt.erasure_id}
            _append(engine, one, EventType.MEMORY_DISABLED, payload)
        return SwitchReceipt(states=tuple(memory_state(engine, i) for i in ids), erasure=receipt)


def enable_memory(
    engine: Engine, user_id: str, *, by: str = "user", reason: str = ""
) -> SwitchReceipt:
    """Turn memory back on (an event): kept memory is read again, erased memory starts empty.

    Ids whose memory went off together with this one (merged ids, ``keep``) come back too.
    """
    engine._check_args(user_id=user_id, by=by, reason=reason)
    _words(by, reason)
    with engine._lock:
        events = engine.store.read_stream(user_id)
        now = switch_state(user_id, events)
        if now.enabled:
            return SwitchReceipt(states=(now,))
        last = next(e for e in reversed(events) if e.seq == now.seq)
        ids = (user_id, *last.payload.get("with", ()))
        states = []
        for one in ids:
            if not memory_state(engine, one).enabled:
                _append(engine, one, EventType.MEMORY_ENABLED, {"by": by, "reason": reason})
            states.append(memory_state(engine, one))
        return SwitchReceipt(states=tuple(states))


# -- one person, several ids ----------------------------------------------------------------


def _links(engine: Engine, user_id: str) -> Links:
    return fold_links(user_id, engine.store.read_stream(user_id))


def merges(engine: Engine, user_id: str) -> list[Merge]:
    """Every merge the user's stream records (proposed, merged, split), oldest first."""
    return merges_from(user_id, engine.store.read_stream(user_id))


def _merge_words(primary: str, other: str, by: str, reason: str) -> None:
    if primary == other:
        raise InvalidOperation(f"{primary!r} cannot be merged with itself: give two ids",
                               code="merge.same")  # fmt: skip
    if not by.strip() or len(by) > 128 or not reason.strip() or len(reason) > 500:
        raise InvalidOperation(
            "a merge names who asked (`by`, 1-128 characters) and why (`reason`, 1-500 "
            "characters): nothing merges on a guess", code="merge.reason",
        )  # fmt: skip


def _mergeable(engine: Engine, primary: str, other: str) -> tuple[Links, Links]:
    """The two ids' links, or why they cannot be merged (nothing is written then)."""
    for user in (primary, other):
        if engine.memory(user).memory_off is not None:
            raise MemoryDisabled(user)
    mine, theirs = _links(engine, primary), _links(engine, other)
    into = mine.merged_into
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
    return mine, theirs


def _link_event(engine: Engine, kind: EventType, user_id: str, merge: Merge) -> NewEvent:
    payload = {"merge_id": merge.merge_id, "primary": merge.primary, "other": merge.other,
               "by": merge.by, "reason": merge.reason}  # fmt: skip
    return NewEvent(event_id=engine.clock.new_id("evt"), type=kind, user_id=user_id,
                    domain=None, payload=payload, recorded_at=engine.clock.now(),
                    fact_id=merge.merge_id)  # fmt: skip


def _write(engine: Engine, appends: list[tuple[str, list[NewEvent]]]) -> None:
    """Each id's events in one append, all of them in one commit; the views are dropped."""
    with engine.store.batch():
        for user, events in appends:
            if events:
                engine.store.append(user, events,
                                    expected_version=engine.store.stream_version(user))  # fmt: skip
    for user, _ in appends:
        engine._forget_joined(user)
        engine._forget(user)


def merge_users(
    engine: Engine, primary: str, other: str, *, by: str, reason: str,
    confirm: str | None = None,
) -> Merge:  # fmt: skip
    """Propose that two ids are one person, or (``confirm``: the proposal's id) merge them.

    Without ``confirm`` nothing is joined: a proposal is recorded in both streams and its
    ``merge_id`` returned (proposing the same pair again returns it). With ``confirm`` the
    merge is recorded in both streams; keys whose joined claims are in a strong conflict are
    frozen for review in the same append.
    """
    engine._check_args(primary=primary, other=other, by=by, reason=reason, confirm=confirm)
    _merge_words(primary, other, by, reason)
    with engine._lock:
        mine, theirs = _mergeable(engine, primary, other)
        if confirm is None:
            known = [m for m in mine.merges.values() if m.other == other
                     and m.status in (MergeStatus.PROPOSED, MergeStatus.MERGED)]  # fmt: skip
            if known:
                return known[0]
            merge = Merge(merge_id=engine.clock.new_id("merge"), primary=primary, other=other,
                          status=MergeStatus.PROPOSED, by=by, reason=reason,
                          at=engine.clock.now())  # fmt: skip
            _write(engine, [(u, [_link_event(engine, EventType.MERGE_PROPOSED, u, merge)])
                            for u in (primary, other)])  # fmt: skip
            return merge
        proposed = mine.merges.get(confirm) or theirs.merges.get(confirm)
        if proposed is None or (proposed.primary, proposed.other) != (primary, other):
            raise NotFound(
                f"no proposal {confirm!r} to merge {other!r} into {primary!r}: propose first "
                "(merge_users without confirm), then confirm with the merge_id it returns",
                code="merge.not_proposed",
            )  # fmt: skip
        if proposed.status is MergeStatus.SPLIT:
            raise InvalidOperation(f"merge {confirm} was split: propose the merge again",
                                   code="merge.closed")  # fmt: skip
        now = engine.clock.now()
        update = {"status": MergeStatus.MERGED, "by": by, "reason": reason, "at": now}
        merge = proposed.model_copy(update=update)
        if mine.holds(merge) and theirs.holds(merge):
            return mine.merges[confirm]
        mine_events = [] if mine.holds(merge) else [
            _link_event(engine, EventType.USERS_MERGED, primary, merge),
            *_joined_freezes(engine, merge),
        ]  # fmt: skip
        theirs_events = [] if theirs.holds(merge) else [
            _link_event(engine, EventType.USERS_MERGED, other, merge)]  # fmt: skip
        _write(engine, [(primary, mine_events), (other, theirs_events)])
        return merge


def _joined_freezes(engine: Engine, merge: Merge) -> list[NewEvent]:
    """``key.frozen`` events for the key slots the joined claims leave in a strong conflict
    (as a write does: a conflict between two ids of a person is a conflict, not an
    overwrite); read from the view the merge is about to make."""
    head, now = engine.store.head(), engine.clock.now()
    payload = {"merge_id": merge.merge_id, "primary": merge.primary, "other": merge.other,
               "by": merge.by, "reason": merge.reason}  # fmt: skip

    def read(user: str, up_to_seq: int | None = None) -> list[Event]:
        events = list(engine.store.read_stream(user, up_to_seq=up_to_seq))
        if user in (merge.primary, merge.other):
            events.append(Event(event_id=f"pending-{user}", type=EventType.USERS_MERGED,
                                user_id=user, domain=None, payload=payload, recorded_at=now,
                                seq=head + 1 + (user == merge.other),
                                version=engine.store.stream_version(user) + 1))  # fmt: skip
        return events

    events = visible(merge.primary, read)
    graph = engine._new_graph(merge.primary)
    for event in events:
        graph.apply(event)
    reviews = list(reviews_from(events).values())
    still_open = {r.review_id for r in reviews if r.status is ReviewStatus.OPEN}
    found = []
    for domain, key in sorted({(f.domain, f.key) for f in graph.memory.facts.values()}):
        spec = engine.registry.spec(domain, key)
        if spec is None:
            continue
        live = [f for f in graph.memory.of_key(domain, key) if f.status in LIVE_STATUSES]
        for items in sorted({tuple(sorted(slot(f.context, spec.context).items())) for f in live}):
            held = engine.reader.resolve_key(
                live, graph.claim_signals, reviews, spec, now, user_id=merge.primary,
                context=dict(items),
            )  # fmt: skip
            if held.outcome is not Outcome.FROZEN or held.review_id in still_open:
                continue
            review_id = engine.clock.new_id("review")
            found.append(NewEvent(
                event_id=engine.clock.new_id("evt"), type=EventType.KEY_FROZEN,
                user_id=merge.primary, domain=domain, payload=frozen_payload(review_id, held),
                recorded_at=now, fact_id=review_id,
            ))  # fmt: skip
    return found


def split_users(engine: Engine, primary: str, other: str, *, by: str, reason: str) -> Merge:
    """Undo a merge (an event in both streams): the two memories are separate again."""
    engine._check_args(primary=primary, other=other, by=by, reason=reason)
    _merge_words(primary, other, by, reason)
    with engine._lock:
        mine, theirs = _links(engine, primary), _links(engine, other)
        held = [m for m in mine.merges.values() if m.other == other
                and (mine.holds(m) or theirs.holds(m))]  # fmt: skip
        if not held:
            raise NotFound(f"{other!r} is not merged into {primary!r}", code="merge.not_found")
        merge = held[0].model_copy(update={"status": MergeStatus.SPLIT, "by": by,
                                           "reason": reason, "at": engine.clock.now()})  # fmt: skip
        _write(engine, [(u, [_link_event(engine, EventType.USERS_SPLIT, u, merge)]
                             if links.holds(merge) else [])
                        for u, links in ((primary, mine), (other, theirs))])  # fmt: skip
        return merge


# -- erasure of a person ----------------------------------------------------------------------


def person_ids(engine: Engine, user_id: str) -> list[str]:
    """The ids merged into one person with ``user_id`` (itself first): the primary and every
    id either stream records as merged into it, agreed by the other side or not."""
    mine = _links(engine, user_id)
    into = mine.merged_into
    root = into.primary if into is not None else user_id
    found = [
        user_id,
        root,
        *(m.other for m in _links(engine, root).others),
        *(m.other for m in mine.others),
    ]
    return list(dict.fromkeys(found))


def erasure_reach(engine: Engine, user_id: str) -> list[str]:
    """Every id an erasure of ``user_id`` touches: the person's ids, then ids once linked."""
    ids = person_ids(engine, user_id)
    linked = {party for one in ids for merge in _links(engine, one).merges.values()
              for party in (merge.primary, merge.other)}  # fmt: skip
    return [*ids, *sorted(linked - set(ids))]


def erase_person(engine: Engine, user_id: str, *, also: Sequence[Companion] = ()) -> ErasureReceipt:
    """Erase the user and every id merged with them; scrub the links and the decisions that
    name them from ids once linked (a proposal, a split merge)."""
    ids = person_ids(engine, user_id)
    linked: dict[str, set[str]] = {}
    for one in ids:
        for merge in _links(engine, one).merges.values():
            for party in (merge.primary, merge.other):
                if party not in ids:
                    linked.setdefault(party, set()).add(merge.merge_id)
    receipts = [engine._erase_one(one, also=also) for one in ids]
    for party, merge_ids in sorted(linked.items()):
        engine.store.purge_facts(party, sorted(merge_ids))
        engine.decision_log.erase_citing(party, ids)
        engine._forget_joined(party)
        engine._forget(party)
    first = receipts[0]
    removed = dict(first.removed)
    for receipt in receipts[1:]:
        for name, count in receipt.removed.items():
            removed[name] = removed.get(name, 0) + count
    digest = hashlib.sha256("".join(r.digest for r in receipts).encode()).hexdigest()
    if len(ids) == 1:
        digest = first.digest
    return first.model_copy(update={"removed": removed, "merged_ids": tuple(ids[1:]),
                                    "digest": digest})  # fmt: skip
