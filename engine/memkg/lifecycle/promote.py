"""Promote: restate a session's structured facts at global scope, through arbitration.

``preference`` and ``fact`` kinds only (states are never promoted; patterns come from
behaviour), and only what the user meant to last (``lasting``):

1. never a turn instruction, nor the session note it left ("window seat this time");
2. an explicit change ("from now on", ``change: true``);
3. a confirmed fact (one that waited for the user's confirmation and got it, or a record the
   user entered or a system verified);
4. a repeated preference: the same value stated on its own at least twice (in this or an
   earlier session, or already in long-term memory).

Everything else stays a session note and is reported as held back, with the reason. Each
restatement is a normal ingest with one idempotency key per session fact, so running it again
changes nothing; a confirmed fact's restatement is confirmed with it; the key's arbitration
outcome after it is reported, with any other live global value it now competes with.

A restatement never brings back what an erasure removed: the store's purge count is noted
before the reads, and each write is made under the engine's write lock (which erasures take)
only while that count is unchanged, after the stream version read then (an erasure in another
process resets it: the write conflicts). Otherwise the promotion is worked out again from the
memory as it now is (``retried``), up to ``ATTEMPTS`` times, then ``ConcurrencyConflict``
(``consolidation.erased_meanwhile``). Consolidation runs ``promote_at`` inside its own
attempts, so that its note merge is checked against the count the promotion read at.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from memkg.errors import ConcurrencyConflict, ValidationFailed
from memkg.lifecycle.ports import MemoryPort, Stored
from memkg.model.fact import Fact, FactStatus, Kind, Observation, Scope
from memkg.model.source import CONFIRMED_BUILTIN

_NOT_PROMOTED = {
    Kind.STATE: "a state: it holds for a while, never for good",
    Kind.PATTERN: "a pattern: derived from behaviour, not promoted",
}
"""Why a session fact of a kind never promoted stays in the session."""


def _held_why(fact: Fact) -> str:
    """Why a session fact of a kind or status never promoted stays in the session."""
    if fact.status is FactStatus.PENDING_CONFIRMATION:
        return "awaiting the user's confirmation"
    if fact.status is not FactStatus.ACTIVE:
        return f"{fact.status.value}: not promoted"
    return _NOT_PROMOTED.get(fact.kind, f"a {fact.kind.value}: not promoted")


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class PromotedFact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    session_fact_id: str
    key: str
    value: Any
    fact_id: str
    duplicate: bool
    """Already promoted by an earlier run: nothing changed."""
    competing: tuple[Any, ...] = ()
    """Other live global values of the key: arbitration decides, the agent should know."""
    arbitration: str
    """How arbitration now resolves the key (outcome: reason)."""


def lasting(fact: Fact, history: Sequence[Fact]) -> str | None:
    """Why a session fact may reach long-term memory, or None (see the module docstring).

    ``history`` is every fact of its key, whatever its status."""
    if _from_turn(fact, history):
        return None
    if fact.change:
        return "explicit change"
    if fact.kind is Kind.FACT:
        # active: the user confirmed it, or it is a record the user entered or a system verified
        return "confirmed record" if fact.source in CONFIRMED_BUILTIN else "confirmed by the user"
    said = {
        f.id
        for f in history
        if f.scope is not Scope.TURN
        and canon(f.value) == canon(fact.value)
        and f.context == fact.context
        and not _from_turn(f, history)
        and f.status is not FactStatus.RETRACTED
    }
    return "repeated preference" if len(said) >= 2 else None


def _from_turn(fact: Fact, history: Sequence[Fact]) -> bool:
    """A session note a turn instruction left behind (written with it, in the same append)."""
    return fact.scope is Scope.SESSION and any(
        f.scope is Scope.TURN
        and (f.session_id, f.observed_at, f.source) == (fact.session_id, fact.observed_at,
                                                       fact.source)
        and canon(f.value) == canon(fact.value)
        for f in history
    )  # fmt: skip


def _pending(port: MemoryPort, user_id: str, domain: str, key: str, stored: Stored) -> bool:
    """Whether the promoted fact waits for confirmation now. A rerun's ingest is the first
    run's (same idempotency key) and reports the status it was stored with, which the first
    run's confirmation may have changed since: a duplicate is looked up."""
    if not stored.duplicate:
        return stored.status is FactStatus.PENDING_CONFIRMATION
    now = next((f for f in port.history(user_id, key, domain) if f.id == stored.fact_id), None)
    return now is not None and now.status is FactStatus.PENDING_CONFIRMATION


ATTEMPTS = 5

T = TypeVar("T")


class Erased(Exception):
    """A purge or erasure ran in the store since the count the reads were made at."""


def retried(port: MemoryPort, user_id: str, session_id: str, work: Callable[[int], T]) -> T:
    """``work(purges)``, ``purges`` being the store's purge count read before ``work`` reads
    anything, made again while it raises ``Erased`` or ``ConcurrencyConflict`` (another writer
    came first), up to ``ATTEMPTS`` times. Then the last attempt's reason is raised: the
    writer's ``ConcurrencyConflict`` (``store.conflict``), or for an erasure or purge
    ``ConcurrencyConflict`` (``consolidation.erased_meanwhile``).

    The count is the store's, not the user's: another user's erasure or purge also moves it
    and costs a retry. Only it is exact: the stores keep no count per user, a purge by audit
    id leaves the stream's version as it was, and an erasure reaches every id linked to the
    person erased (``erasure_reach``), so whose memory it touched is not known from its id."""
    purges, conflict = -1, None
    for _ in range(ATTEMPTS):
        purges = port.stream_mark(user_id)[1]  # before the reads
        try:
            return work(purges)
        except Erased:
            conflict = None
        except ConcurrencyConflict as exc:
            conflict = exc
    if conflict is not None:
        raise conflict
    raise ConcurrencyConflict(
        user_id, purges, purges, code="consolidation.erased_meanwhile",
        message=f"an erasure or purge ran in the store (of this user or any other: the store "
        f"counts them together) during each of {ATTEMPTS} attempts to consolidate session "
        f"{session_id!r} of {user_id!r}, so no note was merged and no fact restated after one; "
        "consolidate again",
    )  # fmt: skip


def promote(
    port: MemoryPort, user_id: str, domain: str, session_id: str
) -> tuple[list[PromotedFact], list[tuple[str, str]]]:
    """The promoted facts, and the (fact id, reason) of those held back."""
    return retried(port, user_id, session_id, Promotion(port, user_id, domain, session_id).at)


class Promotion:
    """The promotion of one session across the attempts of one run: a restatement an attempt
    wrote before it was dropped is still this run's (not a ``duplicate``) when a later attempt
    finds it through its idempotency key."""

    def __init__(self, port: MemoryPort, user_id: str, domain: str, session_id: str) -> None:
        self._port, self._user, self._domain, self._session = port, user_id, domain, session_id
        self._made: set[str] = set()

    def at(self, purges: int) -> tuple[list[PromotedFact], list[tuple[str, str]]]:
        """One attempt (``promote_at``)."""
        found, held_back = promote_at(
            self._port, self._user, self._domain, self._session, purges, wrote=self._made.add
        )
        mine = [f.model_copy(update={"duplicate": False}) if f.fact_id in self._made else f
                for f in found]  # fmt: skip
        return mine, held_back


def _checked(port: MemoryPort, user_id: str, purges: int) -> int:
    """The stream version to write after, if no purge or erasure ran since ``purges`` was
    read (call with the write lock held)."""
    version, now = port.stream_mark(user_id)
    if now != purges:
        raise Erased
    return version


def promote_at(
    port: MemoryPort, user_id: str, domain: str, session_id: str, purges: int, *,
    wrote: Callable[[str], None] = lambda _fact_id: None,
) -> tuple[list[PromotedFact], list[tuple[str, str]]]:  # fmt: skip
    """``promote`` once, its reads made at the store's purge count ``purges`` (read before
    them): ``Erased`` as soon as the count moved, ``ConcurrencyConflict`` when another writer
    appended between a read and its restatement. What it restated before either stays (an
    attempt made again finds it through its idempotency key); ``wrote`` is told the id of
    each restatement as soon as it is stored."""
    found, held_back = [], []
    facts = port.facts(user_id, domain)
    for fact in facts:
        if (fact.session_id, fact.scope) != (session_id, Scope.SESSION):
            continue
        if fact.kind not in (Kind.PREFERENCE, Kind.FACT) or fact.status is not FactStatus.ACTIVE:
            held_back.append((fact.id, _held_why(fact)))
            continue
        history = port.history(user_id, fact.key, domain)
        why = lasting(fact, history)
        if why is None:
            held_back.append((fact.id, "a one-turn instruction" if _from_turn(fact, history)
                              else "said once: not yet meant to last"))  # fmt: skip
            continue
        others = tuple(
            f.value
            for f in facts
            if f.key == fact.key and f.scope is Scope.GLOBAL and f.value != fact.value
        )
        observation = Observation(
            user_id=user_id,
            domain=domain,
            key=fact.key,
            value=fact.value,
            kind=fact.kind,
            source=fact.source,
            confidence=fact.confidence,
            observed_at=fact.observed_at,
            context=fact.context,
            change=fact.change,
            provenance=fact.provenance.model_copy(update={"source_ref": f"fact:{fact.id}"}),
            idempotency_key=f"consolidate:{fact.id}",
        )
        with port.lock:  # no erasure of this engine between the check and the write
            version = _checked(port, user_id, purges)
            try:
                stored = port.ingest(observation, expected_version=version)
            except ValidationFailed as refused:  # stored before a check that refuses it now
                codes = ", ".join(sorted({p.code for p in refused.report.problems}))
                held_back.append((fact.id, f"refused now: {codes}"))
                continue
        if not stored.duplicate:
            wrote(stored.fact_id)
        if why == "confirmed by the user" and _pending(port, user_id, domain, fact.key, stored):
            with port.lock:
                _checked(port, user_id, purges)
                port.confirm(user_id, stored.fact_id, by="consolidation")
        held = port.resolve(user_id, domain, fact.key, context=fact.context)
        found.append(
            PromotedFact(
                session_fact_id=fact.id,
                key=fact.key,
                value=fact.value,
                fact_id=stored.fact_id,
                duplicate=stored.duplicate,
                competing=others,
                arbitration=f"{held.outcome}: {held.reason}",
            )
        )
    return found, held_back
