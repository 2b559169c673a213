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
memory as it now is, up to ``ATTEMPTS`` times, then ``ConcurrencyConflict``
(``consolidation.erased_meanwhile``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from memkg.errors import ConcurrencyConflict
from memkg.lifecycle.ports import MemoryPort, Stored
from memkg.model.fact import Fact, FactStatus, Kind, Observation, Scope
from memkg.model.source import CONFIRMED_BUILTIN


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


class _Erased(Exception):
    """A purge or erasure ran since the promotion read memory."""


def promote(
    port: MemoryPort, user_id: str, domain: str, session_id: str
) -> tuple[list[PromotedFact], list[tuple[str, str]]]:
    """The promoted facts, and the (fact id, reason) of those held back."""
    purges = -1
    for _ in range(ATTEMPTS):
        purges = port.stream_mark(user_id)[1]  # before the reads
        try:
            return _promote(port, user_id, domain, session_id, purges)
        except (_Erased, ConcurrencyConflict):
            continue  # made again from the memory as it now is (restatements are idempotent)
    raise ConcurrencyConflict(
        user_id, purges, purges, code="consolidation.erased_meanwhile",
        message=f"memory of {user_id!r} changed under each of {ATTEMPTS} promotions of session "
        f"{session_id!r} (an erasure, a purge or another writer): nothing more was promoted; "
        "consolidate again",
    )  # fmt: skip


def _checked(port: MemoryPort, user_id: str, purges: int) -> int:
    """The stream version to write after, if no purge or erasure ran since ``purges`` was
    read (call with the write lock held)."""
    version, now = port.stream_mark(user_id)
    if now != purges:
        raise _Erased
    return version


def _promote(
    port: MemoryPort, user_id: str, domain: str, session_id: str, purges: int
) -> tuple[list[PromotedFact], list[tuple[str, str]]]:
    found, held_back = [], []
    facts = port.facts(user_id, domain)
    for fact in facts:
        if (fact.session_id, fact.scope) != (session_id, Scope.SESSION):
            continue
        if fact.kind not in (Kind.PREFERENCE, Kind.FACT) or fact.status is not FactStatus.ACTIVE:
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
            stored = port.ingest(observation, expected_version=version)
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
