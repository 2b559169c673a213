"""How a write supersedes older claims of its key: which claims it replaces, and in what
order claims of one slot stand when observations arrive out of time."""

from __future__ import annotations

from datetime import datetime

from memkg.arbitration.support import canon
from memkg.errors import ValidationFailed
from memkg.events.projection import UserMemory
from memkg.model.fact import Fact, FactStatus, SupersedeReason
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
    found = []
    # a claim of another scope or session is never in the same slot: the write reads its own
    for claim in memory.live_claims_in(obs.domain, obs.key, obs.scope, obs.session_id):
        same_slot = (claim.scope, claim.session_id, claim.context) == (
            obs.scope,
            obs.session_id,
            obs.context,
        )
        if not same_slot:
            continue
        if obs.change:
            found.append((claim, SupersedeReason.EXPLICIT_CHANGE))
        elif claim.source == obs.source:
            found.append((claim, SupersedeReason.RESTATED))
    return sorted(found, key=lambda item: item[0].id)


def ordered_by_time(
    fact: Fact, claims: list[tuple[Fact, SupersedeReason]], checked: Checked
) -> tuple[list[tuple[Fact, SupersedeReason]], Fact | None]:
    """Split replaced claims by observation time: a late-arriving older observation does
    not overwrite a newer one; it goes to history, superseded by the newest claim.
    Claims that say they were observed at the same instant are ordered on their content
    (``_content``), never on arrival, so the same writes in any order leave the same claim
    standing; an observation that gives no time was observed as it arrived, so it is the
    newest at that instant.

    A correction (``supersedes``) names its target and applies whatever the times.
    """
    if checked.observation.supersedes is not None:
        return claims, None
    # a newer claim awaiting confirmation outdates nothing but its source's claims awaiting
    # it too (``until_confirmed``)
    claims = [(c, why) for c, why in claims if c.status is not FactStatus.PENDING_CONFIRMATION
              or c.observed_at <= fact.observed_at or _revised(c, fact)]  # fmt: skip
    if checked.observation.observed_at is None:
        older = [(c, why) for c, why in claims if c.observed_at <= fact.observed_at]
        newer = [c for c, _ in claims if c.observed_at > fact.observed_at]
    else:
        mine = _content(fact)
        # another source's claim of the same instant is concurrent, not older: an explicit
        # change does not end it (arbitration weighs the two, as it does in any order)
        claims = [(c, why) for c, why in claims if not _concurrent(c, fact, why)]
        older = [(c, why) for c, why in claims if _content(c) <= mine]
        newer = [c for c, _ in claims if _content(c) > mine]
    return older, max(newer, key=lambda c: (_content(c), c.id), default=None)


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
    had it held then (``replaced_claims``, ``ordered_by_time``), and that hold still. Claims
    observed after it stay: it is the older observation. A correction (``supersedes``) ended
    the fact it names when written, and ends nothing more."""
    if fact.supersedes is not None:
        return []
    mine, found = _content(fact), []
    arrived = fact.observed_at == fact.recorded_at  # as ``ordered_by_time`` reads a write
    for claim in memory.live_claims_in(fact.domain, fact.key, fact.scope, fact.session_id):
        same_slot = (claim.scope, claim.session_id, claim.context) == (
            fact.scope, fact.session_id, fact.context
        )  # fmt: skip
        if claim.id == fact.id or not same_slot:
            continue
        if fact.change:
            why = SupersedeReason.EXPLICIT_CHANGE
        elif claim.source == fact.source:
            why = SupersedeReason.RESTATED
        else:
            continue
        if arrived:  # observed as it arrived (no time given): older by time, then arrival
            older = (claim.observed_at, claim.seq) < (fact.observed_at, fact.seq)
        else:
            older = _content(claim) <= mine and not _concurrent(claim, fact, why)
        if older:
            found.append((claim, why))
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
