"""How a write supersedes older claims of its key: which claims it replaces, and in what
order claims of one slot stand when observations arrive out of time."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime

from memkg.arbitration.support import canon
from memkg.errors import ValidationFailed
from memkg.events.projection import UserMemory
from memkg.model.fact import Fact, FactStatus, Observation, SupersedeReason
from memkg.model.report import Problem, ValidationReport
from memkg.validate.validator import Checked


def replaced_claims(memory: UserMemory, checked: Checked) -> list[tuple[Fact, SupersedeReason]]:
    """Older claims this observation supersedes.

    1. ``supersedes`` names a fact: a correction of exactly that fact;
    2. ``change`` is set: an explicit change in the world ends every claim of the key
       in the same scope, whatever its source;
    3. otherwise the same source restating the key in the same scope, session and
       context replaces its own earlier claim (other sources' claims stay: they compete).
    """
    obs = checked.observation
    if obs.supersedes is not None:
        target = memory.fact(obs.supersedes)
        if target is None or target.key != obs.key or target.domain != obs.domain:
            raise ValidationFailed(
                ValidationReport(
                    problems=(
                        Problem(
                            code="fact.unknown",
                            path="$.supersedes",
                            message=f"no fact {obs.supersedes} of key {obs.key} for this "
                            "user; send the id of the fact being corrected",
                            stage="envelope",
                        ),
                    )
                )
            )
        return (
            [] if target.status is FactStatus.SUPERSEDED else [(target, SupersedeReason.CORRECTION)]
        )
    # a claim of another scope or session is never in the same slot: the write reads its own
    found = [(claim, why) for claim in memory.live_claims_in(obs.domain, obs.key, obs.scope,
                                                              obs.session_id)
             if (why := _ends(claim, obs)) is not None]  # fmt: skip
    return sorted(found, key=lambda item: item[0].id)


def _ends(claim: Fact, new: Observation | Fact) -> SupersedeReason | None:
    """Why a write of ``new`` ends ``claim`` had it held then, or ``None``: a claim of its slot
    (scope, session, context) that an explicit change ends whatever its source, or that the
    same source restates. When it holds is ``_placing``'s to say."""
    if (claim.scope, claim.session_id, claim.context) != (new.scope, new.session_id, new.context):
        return None
    if new.change:
        return SupersedeReason.EXPLICIT_CHANGE
    return SupersedeReason.RESTATED if claim.source == new.source else None


def ordered_by_time(
    fact: Fact, claims: list[tuple[Fact, SupersedeReason]], checked: Checked
) -> tuple[list[tuple[Fact, SupersedeReason]], Fact | None]:
    """Split replaced claims by where they stand against ``fact`` (``_placing``): a
    late-arriving older observation does not overwrite a newer one; it goes to history,
    superseded by the newest claim. An observation that gives no time was observed as it
    arrived, so it is the newest at that instant.

    A correction (``supersedes``) names its target and applies whatever the times.
    """
    if checked.observation.supersedes is not None:
        return claims, None
    # a newer claim awaiting confirmation outdates nothing but its source's claims awaiting
    # it too (``until_confirmed``)
    claims = [(c, why) for c, why in claims if c.status is not FactStatus.PENDING_CONFIRMATION
              or c.observed_at <= fact.observed_at or _revised(c, fact)]  # fmt: skip
    place = _placing(fact, arrived=checked.observation.observed_at is None)
    placed = [(c, why, place(c, why)) for c, why in claims]
    older = [(c, why) for c, why, at in placed if at < 0]
    newer = [c for c, _, at in placed if at > 0]
    return older, max(newer, key=lambda c: (_content(c), c.id), default=None)


_UNSTORED = sys.maxsize
"""The arrival of a fact being written (``seq`` 0 until stored): after every stored claim."""


def _placing(fact: Fact, *, arrived: bool) -> Callable[[Fact, SupersedeReason], int]:
    """Where a claim of ``fact``'s slot, ended for a reason (``_ends``), stands against it:
    before it (-1: ``fact`` ends it), after it (1: it outdates ``fact``), or beside it (0).

    ``arrived``: ``fact`` was observed as it arrived (no time given): claims are ordered by
    observation time, then arrival. Otherwise by time and content (``_content``), so the same
    writes in any order leave the same claim standing; another source's claim of the same
    instant is then concurrent, not older: an explicit change does not end it (arbitration
    weighs the two, as it does in any order)."""
    if arrived:
        at = (fact.observed_at, fact.seq or _UNSTORED)
        return lambda claim, _why: -1 if (claim.observed_at, claim.seq) < at else 1
    mine = _content(fact)

    def place(claim: Fact, why: SupersedeReason) -> int:
        if _concurrent(claim, fact, why):
            return 0
        return -1 if _content(claim) <= mine else 1

    return place


def until_confirmed(
    fact: Fact, claims: list[tuple[Fact, SupersedeReason]], checked: Checked
) -> list[tuple[Fact, SupersedeReason]]:
    """The claims a new ``fact`` ends now: all it replaces, unless it awaits the user's
    confirmation; then only its own source's claims awaiting it too (a source revising what
    it said, so they do not pile up), and the rest when it is confirmed (``ended_on_confirm``).
    An unconfirmed claim (a third party's "moved to Shanghai") ends nothing that holds, nor
    another source's claim awaiting confirmation: rejected, it leaves memory as it was. A
    correction naming its fact applies at once."""
    if fact.status is not FactStatus.PENDING_CONFIRMATION or checked.observation.supersedes:
        return claims
    return [(c, why) for c, why in claims if _revised(c, fact)]


def _revised(claim: Fact, fact: Fact) -> bool:
    """Whether ``claim`` awaits confirmation as ``fact`` does, from the same source: the one
    claim awaiting confirmation a newer one can end (or be outdated by)."""
    return (
        claim.status is FactStatus.PENDING_CONFIRMATION
        and fact.status is FactStatus.PENDING_CONFIRMATION
        and claim.source == fact.source
    )


def ended_on_confirm(memory: UserMemory, fact: Fact) -> list[tuple[Fact, SupersedeReason]]:
    """The claims a confirmation of ``fact`` ends: those it would have replaced when written
    had it held then (``_ends``, ``_placing``, as for a write), and that hold still. Claims
    observed after it stay: it is the older observation. A correction (``supersedes``) ended
    the fact it names when written, and ends nothing more."""
    if fact.supersedes is not None:
        return []
    place = _placing(fact, arrived=fact.observed_at == fact.recorded_at)  # as a write reads it
    found = [(claim, why) for claim in memory.live_claims_in(fact.domain, fact.key, fact.scope,
                                                              fact.session_id)
             if claim.id != fact.id and (why := _ends(claim, fact)) is not None
             and place(claim, why) < 0]  # fmt: skip
    return sorted(found, key=lambda item: item[0].id)


def _concurrent(claim: Fact, fact: Fact, why: SupersedeReason) -> bool:
    return (
        why is SupersedeReason.EXPLICIT_CHANGE
        and claim.observed_at == fact.observed_at
        and claim.source != fact.source
    )


def _content(fact: Fact) -> tuple[datetime, bool, str, float, str, str]:
    """The order of claims for one slot: observation time, then content (an explicit change,
    the value, confidence, source, context), never the order they arrived in."""
    return (
        fact.observed_at,
        fact.change,
        canon(fact.value),
        fact.confidence,
        fact.source.value,
        canon(fact.context),
    )
