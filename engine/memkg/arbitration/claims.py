"""Claims: a fact about a key, with its current weight and its tier in scope priority.

``build_claims`` turns a user's facts into the claims one read competes with: it places each
fact in a tier for the asking session and turn, and weighs it with the signals recorded on its
edge (``SignalLookup``: the engine answers it from the contextual graph).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from memkg.arbitration.resolution import Tier
from memkg.model.fact import LIVE_STATUSES, REPLACING, Fact, FactStatus, Scope, superseded_plainly
from memkg.model.weight import Signal, Weight, WeightParams, claim_weight

COUNTED = (FactStatus.ACTIVE, FactStatus.FROZEN)
"""Statuses of the claims that count as evidence (pending ones are listed, not counted)."""

SignalLookup = Callable[[Fact], Sequence[Signal]]
"""The interaction signals on a fact's edge that count for it."""


class Claim(BaseModel):
    """One fact competing for its key, weighed now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact: Fact
    weight: Weight
    tier: Tier
    review_id: str | None = None
    """Set when the claim is a reviewer's resolution, not a remembered fact."""

    @property
    def score(self) -> float:
        return self.weight.value


def slot(context: Mapping[str, str], fields: Sequence[str]) -> dict[str, str]:
    """The part of a claim's context that separates claims (the key declares the fields).

    >>> slot({"trip_type": "business", "note": "x"}, ("trip_type",))
    {'trip_type': 'business'}
    """
    return {name: context[name] for name in sorted(fields) if name in context}


def tier_of(fact: Fact, session_id: str | None, current_turn: AbstractSet[str]) -> Tier | None:
    """The fact's tier for this read, or None when it does not take part in it.

    Turn claims count only when they are the current turn's instruction (earlier turns live
    on in the session notes); session and turn claims only within the asking session.
    """
    if fact.scope is Scope.GLOBAL:
        return Tier.GLOBAL
    if session_id is None or fact.session_id != session_id:
        return None
    if fact.scope is Scope.SESSION:
        return Tier.SESSION
    return Tier.TURN if fact.id in current_turn else None


def current_turn(facts: Sequence[Fact], session_id: str | None, turn: str | None) -> set[str]:
    """Ids of the turn claims that are this turn's instruction.

    ``turn`` names the turn by its ``provenance.source_ref``; without it, the session's latest
    turn claims count, unless a session note was observed after them.
    """
    if session_id is None:
        return set()
    in_session = [f for f in facts if f.session_id == session_id]
    turns = [f for f in in_session if f.scope is Scope.TURN]
    if turn is not None:
        return {f.id for f in turns if f.provenance.source_ref == turn}
    if not turns:
        return set()
    latest = max(f.observed_at for f in turns)
    notes = [f.observed_at for f in in_session if f.scope is Scope.SESSION]
    if notes and max(notes) > latest:
        return set()
    return {f.id for f in turns if f.observed_at == latest}


def build_claims(
    facts: Sequence[Fact],
    *,
    now: datetime,
    params: WeightParams,
    signals: SignalLookup,
    session_id: str | None = None,
    turn: str | None = None,
    turn_ids: AbstractSet[str] | None = None,
) -> list[Claim]:
    """Weighed claims for the facts that take part in a read (any status: the arbiter sorts).

    ``turn_ids`` are the current turn's claims when the caller found them among more facts
    than it has weighed (``current_turn``); by default they are found among ``facts``.
    """
    if turn_ids is None:
        turn_ids = current_turn(facts, session_id, turn)
    claims = []
    for fact in facts:
        tier = tier_of(fact, session_id, turn_ids)
        if tier is None:
            continue
        weight = claim_weight(
            fact.confidence,
            fact.source.value,
            fact.observed_at,
            signals(fact),
            now,
            params,
        )
        claims.append(Claim(fact=fact, weight=weight, tier=tier))
    return claims


def silent(fact: Fact, holding: AbstractSet[str]) -> bool:
    """Whether no read of the fact's key can tell ``fact`` from a fact never stored, while
    ``holding`` (the ids of the user's facts that hold) holds no more than it does now: a
    superseded claim that ``may_take_part`` does not list, of global scope (``current_turn``
    reads only turn and session claims) and with no context (so it names no context slot a
    read could resolve). Superseded facts stay superseded, and a fact that stops holding
    does not hold again but by a confirmation, so such a fact stays silent until one.
    A snapshot's restore leaves such facts unread (``events.snapshot``)."""
    return superseded_plainly(fact) and not (
        fact.supersede_reason in REPLACING and fact.superseded_by in holding
    )


def may_take_part(facts: Sequence[Fact], holding: Container[str] | None = None) -> list[Fact]:
    """The facts of one key a read can list (``lineup.Lineup``), in their order: those that
    hold, and those superseded by an explicit change or a correction that holds. The rest of
    the key's history (restated, outdated, retracted, expired claims) is never weighed.

    ``holding``: the ids of the key's facts that hold, when ``facts`` are not all of the key's
    (a correction may hold among facts left out); by default, those among ``facts``.
    """
    if holding is None:
        holding = {f.id for f in facts if f.status in LIVE_STATUSES}
    return [
        f
        for f in facts
        if f.status in LIVE_STATUSES
        or (
            f.status is FactStatus.SUPERSEDED
            and f.supersede_reason in REPLACING
            and f.superseded_by in holding
        )
    ]
