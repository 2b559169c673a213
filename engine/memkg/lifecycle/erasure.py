"""Erasure: remove every trace of a user, and say exactly what was removed."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from memkg.clock import Clock
from memkg.events.store import Companion, EventStore
from memkg.lifecycle.notes import NoteBook
from memkg.model.event import Event, EventType
from memkg.model.fact import Kind, Source, SupersedeReason


class ErasureReceipt(BaseModel):
    """Proof of an erasure, for the user and the auditor.

    ``digest`` is a sha256 over the ids of the removed events, in log order; the store keeps
    only an anonymous tombstone (an HMAC of the user id), never the id itself.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    erasure_id: str
    user_id: str
    scope: str
    """``subject`` (everything about the user) or ``audit:<id>`` (the facts carrying it)."""
    at: datetime
    removed: dict[str, int]
    digest: str
    files: tuple[str, ...]
    merged_ids: tuple[str, ...] = ()
    """Other ids of the same person, erased with this one (counts and digest cover them)."""


def erase_subject(
    store: EventStore, user_id: str, clock: Clock, *, companions: Sequence[Companion] = ()
) -> ErasureReceipt:
    """Erase the subject from ``store`` and, in the same transaction, from ``companions``
    (counted in ``removed`` by the name of their first table)."""
    erasure_id, at = clock.new_id("erasure"), clock.now()
    if companions:
        counts = store.erase_subject(user_id, erasure_id=erasure_id, at_iso=at.isoformat(),
                                     companions=companions)  # fmt: skip
    else:  # stores that predate companions take no such argument
        counts = store.erase_subject(user_id, erasure_id=erasure_id, at_iso=at.isoformat())
    beside = {c.tables[0]: n for c, n in zip(companions, counts.companions, strict=True)}
    return ErasureReceipt(
        erasure_id=erasure_id,
        user_id=user_id,
        scope="subject",
        at=at,
        removed={
            "events": counts.events,
            "salts": counts.salts,
            "idempotency_keys": counts.idempotency_keys,
            **beside,
        },
        digest=counts.digest,
        files=tuple(str(path) for path in store.files()),
    )


def audit_reach(
    store: EventStore, audit_log_id: str,
    joined: Callable[[str], Sequence[str]] = lambda _user: (),
) -> dict[str, list[str]]:  # fmt: skip
    """The ids, by user, of the facts and notes whose provenance carries ``audit_log_id``, of
    the facts schema migrations made of those (``migrated_into``), of the patterns that may
    have counted them (``behaviour_since``, ``patterns_after``: in the owner's stream, and in
    the streams of the ids ``joined`` gives, written while merged with the owner, when their
    views counted its behaviour), and of the notes consolidation derived from them
    (``NoteBook.derived_from``): a note merged from notes of several audit ids carries none of
    them, yet holds what each said."""
    found = store.fact_ids_with_audit_id(audit_log_id)
    reach: dict[str, list[str]] = {}

    def add(user_id: str, ids: Sequence[str]) -> None:
        reach[user_id] = list(dict.fromkeys([*reach.get(user_id, ()), *ids]))

    for user_id, fact_ids in found.items():
        events = list(store.read_stream(user_id))
        held = [*fact_ids, *migrated_into(events, fact_ids)]
        since = behaviour_since(events, held)
        held += patterns_after(events, since, held)
        book = NoteBook.from_events(e for e in events if e.type in NoteBook.EVENTS)
        add(user_id, [*held, *book.derived_from(held)])
        for other in joined(user_id) if since else ():
            theirs = list(store.read_stream(other))
            windows = merged_windows(theirs, user_id)
            made = patterns_after((e for e in theirs if any(a < e.seq < b for a, b in windows)),
                                  since, ())  # fmt: skip
            if made:
                add(other, made)
    return reach


def merged_windows(events: Iterable[Event], party: str) -> list[tuple[float, float]]:
    """The log positions between which the stream's id was merged with ``party`` (from the
    merge to its split, or on): what a view of that id wrote then may hold ``party``'s."""
    opened: dict[str, float] = {}
    windows: list[tuple[float, float]] = []
    for event in events:
        merge_id = str(event.payload.get("merge_id"))
        sides = (event.payload.get("primary"), event.payload.get("other"))
        if event.type == EventType.USERS_MERGED and party in sides:
            opened.setdefault(merge_id, event.seq)
        elif event.type == EventType.USERS_SPLIT and merge_id in opened:
            windows.append((opened.pop(merge_id), event.seq))
    return windows + [(start, math.inf) for start in opened.values()]


def behaviour_since(events: Iterable[Event], fact_ids: Collection[str]) -> dict[str, int]:
    """Per domain, the log position of the first behaviour fact among ``fact_ids``: a pattern
    (``derive_patterns``) written in that domain after it may have counted it."""
    wanted, since = set(fact_ids), dict[str, int]()
    for event in events:
        if (
            event.type == EventType.FACT_ASSERTED
            and event.domain is not None
            and event.fact_id in wanted
            and (event.payload.get("fact") or {}).get("source") == Source.BEHAVIOR.value
        ):
            since.setdefault(event.domain, event.seq)
    return since


def patterns_after(
    events: Iterable[Event], since: Mapping[str, int], held: Collection[str]
) -> list[str]:
    """The pattern facts among ``events`` written in a domain of ``since`` after its
    position, but those ``held``. A pattern holds what the behaviour showed (the usual hours)
    and records no more of where it came from; one that also counted facts kept is derived
    again from those on the next call."""
    found = []
    for event in events:
        fact = event.payload.get("fact") or {}
        if (
            event.type == EventType.FACT_ASSERTED
            and event.fact_id is not None
            and event.fact_id not in held
            and event.domain is not None
            and event.seq > since.get(event.domain, event.seq)
            and fact.get("kind") == Kind.PATTERN.value
            and fact.get("source") == Source.SYSTEM.value
        ):
            found.append(event.fact_id)
    return found


def migrated_into(events: Iterable[Event], fact_ids: Collection[str]) -> list[str]:
    """The facts schema migrations made of ``fact_ids``, and of those in turn: a merged fact
    holds each part's value, though it carries only the newest part's audit id."""
    into: dict[str, list[str]] = {}
    for event in events:
        payload = event.payload
        if event.type == EventType.FACT_SUPERSEDED and (
            payload.get("reason") == SupersedeReason.MIGRATION.value
        ):
            into.setdefault(payload["fact_id"], []).append(payload["by_fact_id"])
    seen, todo, out = set(fact_ids), list(fact_ids), []
    while todo:
        for made in into.get(todo.pop(), ()):
            if made not in seen:
                seen.add(made)
                out.append(made)
                todo.append(made)
    return out


def erase_audit_id(
    store: EventStore, audit_log_id: str, clock: Clock, *,
    companions: Callable[[str, list[str]], Sequence[Companion]] = lambda _user, _ids: (),
    reach: dict[str, list[str]] | None = None,
) -> list[ErasureReceipt]:  # fmt: skip
    """Remove exactly the facts whose provenance carries ``audit_log_id``, and the notes
    derived from them, one receipt per user; ``reach``: those ids by user, when the caller
    already looked them up (``audit_reach``); ``companions(user, fact_ids)`` remove their
    rows in each purge's transaction (counted in ``removed`` by the name of their first
    table)."""
    receipts = []
    found = audit_reach(store, audit_log_id) if reach is None else reach
    for user_id, fact_ids in sorted(found.items()):
        beside = companions(user_id, fact_ids)
        if beside:
            counts = store.purge_facts(user_id, fact_ids, companions=beside)
        else:  # stores that predate companions take no such argument
            counts = store.purge_facts(user_id, fact_ids)
        receipts.append(
            ErasureReceipt(
                erasure_id=clock.new_id("erasure"),
                user_id=user_id,
                scope=f"audit:{audit_log_id}",
                at=clock.now(),
                removed={
                    "events": counts.events,
                    "facts": len(fact_ids),
                    "idempotency_keys": counts.idempotency_keys,
                    **{c.tables[0]: n for c, n in zip(beside, counts.companions, strict=True)},
                },
                digest=counts.digest,
                files=tuple(str(path) for path in store.files()),
            )
        )
    return receipts
