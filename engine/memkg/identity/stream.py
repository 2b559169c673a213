"""Which events a read of a user sees: the memory switch and merged ids applied to the log.

``visible(user, read)`` is what every projection of the user is folded from:

1. Memory off (the user's last switch event is ``memory.disabled``): only that event. The
   stored memory is not read (``keep``) or no longer there (``erase``).
2. A primary with merged ids: its own events and, for each merge both streams record, the
   other id's events (not its own switch and link events), in log order, all read as the
   primary's (``relabel``: the events and their facts carry the primary's id). An other id
   whose memory is off adds nothing.
3. An id merged into a primary: the primary's joined view, read as this id's.
4. Anything else: the user's own events.

Log positions are global, so ``up_to_seq`` gives every part as of the same point: a view as
of a past position is the view that was read then.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import Any

from memkg.identity.links import IDENTITY_EVENTS, Links, fold_links
from memkg.model.event import Event, EventType
from memkg.model.identity import MemoryState, SwitchMode

ReadStream = Callable[..., Sequence[Event]]
"""``read_stream(user_id, up_to_seq=None)``: the user's own events in log order."""

SWITCH_EVENTS = frozenset({EventType.MEMORY_DISABLED, EventType.MEMORY_ENABLED})
_OWN_ONLY = SWITCH_EVENTS | IDENTITY_EVENTS
_TYPE = attrgetter("type")


def holds_any(events: Sequence[Event], types: Iterable[EventType]) -> bool:
    """Whether an event of one of ``types`` is in ``events``. Most streams hold no switch or
    link event, and their view is the stream as it is: this looks in C (a list's ``in``
    compares by identity first; hashing an enum member runs Python code)."""
    kinds = list(map(_TYPE, events))
    return any(kind in kinds for kind in types)


def last_switch(events: Sequence[Event]) -> Event | None:
    for event in reversed(events):
        if event.type in SWITCH_EVENTS:
            return event
    return None


def switch_state(user_id: str, events: Sequence[Event]) -> MemoryState:
    """The user's memory switch as their own events leave it."""
    last = last_switch(events)
    if last is None:
        return MemoryState(user_id=user_id, enabled=True)
    off = last.type is EventType.MEMORY_DISABLED
    return MemoryState(
        user_id=user_id, enabled=not off, mode=SwitchMode(last.payload["mode"]) if off else None,
        by=last.payload.get("by"), since=last.recorded_at, seq=last.seq,
    )  # fmt: skip


def _own(user_id: str, read: ReadStream, up_to_seq: int | None) -> tuple[list[Event], bool]:
    """The user's own events, or only the switch event while memory is off (and whether it is)."""
    events, off, _ = _own_plain(user_id, read, up_to_seq)
    return events, off


def _own_plain(
    user_id: str, read: ReadStream, up_to_seq: int | None
) -> tuple[list[Event], bool, bool]:
    """``_own``, and whether the stream holds no switch or link event at all."""
    events = list(read(user_id, up_to_seq=up_to_seq))
    if not holds_any(events, _OWN_ONLY):
        return events, False, True
    last = last_switch(events)
    if last is not None and last.type is EventType.MEMORY_DISABLED:
        return [last], True, False
    return events, False, False


def visible(user_id: str, read: ReadStream, up_to_seq: int | None = None) -> list[Event]:
    """The events a read of ``user_id`` folds (see the module docstring)."""
    return view(user_id, read, up_to_seq)[0]


def view(
    user_id: str, read: ReadStream, up_to_seq: int | None = None
) -> tuple[list[Event], frozenset[str]]:
    """``visible``'s events, and the ids whose streams they were read from."""
    own, off, plain = _own_plain(user_id, read, up_to_seq)
    alone = frozenset({user_id})
    if plain or off or not holds_any(own, IDENTITY_EVENTS):
        return own, alone
    links = fold_links(user_id, own)
    into = links.merged_into
    if into is not None:
        primary, primary_off = _own(into.primary, read, up_to_seq)
        primary_links = fold_links(into.primary, primary)
        if not primary_off and primary_links.holds(into):
            joined, ids = _joined(primary, primary_links, read, up_to_seq, {user_id: own})
            return relabel(user_id, joined), ids
    if into is None and not links.others:
        return own, alone
    return _joined(own, links, read, up_to_seq, {})


def _joined(
    own: list[Event], links: Links, read: ReadStream, up_to_seq: int | None,
    known: dict[str, list[Event]],
) -> tuple[list[Event], frozenset[str]]:  # fmt: skip
    """A primary's events with those of every other id whose stream holds the merge too (and
    the ids read); link events of merges the other side does not hold are left out."""
    parts: list[Iterable[Event]] = []
    agreed, ids = set(), {links.user_id}
    for merge in links.others:
        if merge.other in known:
            theirs, off = known[merge.other], False
        else:
            theirs, off = _own(merge.other, read, up_to_seq)
        if off or not fold_links(merge.other, theirs).holds(merge):
            continue
        agreed.add(merge.merge_id)
        ids.add(merge.other)
        parts.append(relabel(links.user_id, (e for e in theirs if e.type not in _OWN_ONLY)))
    mine = [e for e in own if not _unagreed(e, agreed)]
    if not parts:
        return mine, frozenset(ids)
    return list(heapq.merge(mine, *parts, key=lambda e: e.seq)), frozenset(ids)


def _unagreed(event: Event, agreed: set[str]) -> bool:
    return event.type is EventType.USERS_MERGED and event.payload["merge_id"] not in agreed


def relabel(user_id: str, events: Iterable[Event]) -> list[Event]:
    """``events`` read as ``user_id``'s: other ids' events and facts carry it instead."""
    out = []
    for event in events:
        if event.user_id == user_id:
            out.append(event)
            continue
        update: dict[str, Any] = {"user_id": user_id}
        if event.type is EventType.FACT_ASSERTED:
            update["payload"] = {**event.payload,
                                 "fact": {**event.payload["fact"], "user_id": user_id}}  # fmt: skip
        out.append(event.model_copy(update=update))
    return out
