"""Which memory holds when the claims about one key disagree (DESIGN section 5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memkg.arbitration.claims import Claim, slot
from memkg.arbitration.policy import Policy
from memkg.arbitration.questions import QuestionBook
from memkg.arbitration.resolution import (
    ClaimScore,
    Outcome,
    Resolution,
    StaleFlag,
    Standing,
    Step,
    Tier,
    ValueSupport,
)
from memkg.arbitration.review import Review, ReviewStatus
from memkg.arbitration.support import canon, rank_values, review_claim
from memkg.model.fact import FactStatus, Kind
from memkg.validate.registry import KeySpec

_REPLACED = ("explicit change", "correction")
_LONG_TERM = (Kind.FACT, Kind.PREFERENCE)
_ORDER = {Standing.WON: 0, Standing.CONTESTED: 1, Standing.LOST: 2, Standing.PENDING: 3}


def resolve(
    claims: Sequence[Claim],
    policy: Policy,
    now: datetime,
    spec: KeySpec,
    *,
    user_id: str,
    context: Mapping[str, str] | None = None,
    default: Any = None,
    review: Review | None = None,
    questions: QuestionBook | None = None,
    language: str | None = None,
    labels: Mapping[tuple[str, str], str] | None = None,
) -> Resolution:
    """Resolve one ``(user, domain, key, context)`` slot from its claims.

    Only the claims of this user, key and context slot (the context fields the key declares)
    take part; expired, retracted and restated claims do not; claims awaiting confirmation
    are listed and not counted. Policy, in order:

    1. Review: an open review keeps the key frozen; a resolved one holds the reviewer's
       value (``review_resolution``) until newer evidence arrives, which then competes with
       it as a claim of weight 1.
    2. Scope priority: the current turn's instruction beats the session notes, which beat
       long-term memory, which beats the role default (``scope_priority``, ``role_default``;
       ``no_evidence`` when there is neither claim nor default).
    3. Explicit change: the newest claim that states a change supersedes the older claims of
       its tier whatever their source; other sources that asserted them are flagged stale
       (``explicit_change``).
    4. Weighted evidence: support for a value is the sum of its claims' weights; the best
       supported wins, ties broken by the strongest single claim, then the newest, then the
       value itself, never by arrival. Conflict strength is the strongest dissent's support:
       below ``silent_below`` adopt, up to ``freeze_above`` adopt provisionally and ask,
       above it freeze for review (in turn and session tiers ask instead: the user is there).
       Multi-valued keys adopt the union of the asserted items (``weighted_evidence``;
       ``single_claim`` when every counted claim agrees).
    5. Staleness: long-term claims past the key's horizon are flagged; a winner backed only
       by stale claims is adopted provisionally with a reconfirmation question.
    """
    scores: dict[str, ClaimScore] = {}

    def put(claim: Claim, standing: Standing, reason: str, by: str | None = None) -> None:
        f = claim.fact
        scores[f.id] = ClaimScore(
            fact_id=f.id,
            value=f.value,
            source=f.source,
            kind=f.kind,
            scope=f.scope,
            tier=claim.tier,
            session_id=f.session_id,
            context=dict(f.context),
            confidence=f.confidence,
            observed_at=f.observed_at,
            status=f.status,
            change=f.change,
            score=round(claim.score, 4),
            weight=claim.weight,
            standing=standing,
            reason=reason,
            beaten_by=by,
        )

    def record() -> tuple[ClaimScore, ...]:
        return tuple(
            sorted(scores.values(), key=lambda c: (_ORDER[c.standing], -c.score, c.fact_id))
        )

    want = slot(context or {}, spec.context)
    base: dict[str, Any] = {
        "user_id": user_id,
        "domain": spec.domain,
        "key": spec.key,
        "context": want,
        "multi": spec.multi,
        "decided_at": now,
    }
    ask = _asker(questions, spec, language or policy.language, labels)
    live, replaced = [], []
    for claim in claims:
        f = claim.fact
        if (f.user_id, f.domain, f.key) != (user_id, spec.domain, spec.key):
            continue
        if slot(f.context, spec.context) != want:
            continue
        if f.valid_until is not None and f.valid_until <= now:
            continue
        if f.status is FactStatus.PENDING_CONFIRMATION:
            put(claim, Standing.PENDING, "awaits the user's confirmation; not counted")
        elif f.status in (FactStatus.ACTIVE, FactStatus.FROZEN):
            live.append(claim)
        elif f.status is FactStatus.SUPERSEDED and f.status_reason in _REPLACED:
            replaced.append(claim)
    by_id = {c.fact.id: c for c in live}
    replaced = [c for c in replaced if c.fact.superseded_by in by_id]

    # 1. review
    if review is not None and review.status is ReviewStatus.OPEN:
        for claim in live:
            put(claim, Standing.CONTESTED, f"key frozen by review {review.review_id}")
        return Resolution(
            **base,
            outcome=Outcome.FROZEN,
            step=Step.WEIGHTED_EVIDENCE,
            reason=f"frozen for human review {review.review_id}: {review.reason}",
            strength=review.strength,
            claims=record(),
            review_id=review.review_id,
        )
    if review is not None and review.resolved_at is not None:
        until = review.resolved_at
        settled = [c for c in live if c.tier is Tier.GLOBAL and c.fact.recorded_at <= until]
        for claim in settled:
            agrees = canon(claim.fact.value) == canon(review.value)
            put(
                claim,
                Standing.WON if agrees else Standing.LOST,
                f"settled by review {review.review_id}",
                None if agrees else f"review:{review.review_id}",
            )
        live = [c for c in live if c not in settled]
        if not live:
            return Resolution(
                **base,
                value=review.value,
                outcome=Outcome.ADOPTED,
                step=Step.REVIEW_RESOLUTION,
                reason=f"{review.reviewer} resolved review {review.review_id}: {review.note}",
                claims=record(),
                review_id=review.review_id,
            )
        live.append(review_claim(review, spec))

    # 2. scope priority (the role default is the lowest scope)
    if not live:
        pending = sorted(
            (s for s in scores.values() if s.standing is Standing.PENDING),
            key=lambda s: (s.observed_at, canon(s.value)),
        )
        question = ask("confirm", pending[-1].value, None) if pending else None
        if default is not None:
            return Resolution(
                **base,
                value=default,
                outcome=Outcome.DEFAULT,
                step=Step.ROLE_DEFAULT,
                reason="no claims: the domain's role default",
                claims=record(),
                question=question,
            )
        return Resolution(
            **base,
            outcome=Outcome.NO_CLAIMS,
            step=Step.NO_EVIDENCE,
            reason="no claims and no role default",
            claims=record(),
            question=question,
        )
    top = max(live, key=lambda c: c.tier.rank).tier
    contenders = [c for c in live if c.tier is top]
    outranked = [c for c in live if c.tier is not top]

    # 3. explicit change
    stale: list[StaleFlag] = []
    dropped: list[Claim] = []
    changes = sorted((c for c in contenders if c.fact.change), key=_strength_order)
    if changes:
        at = max(c.fact.observed_at for c in changes)
        latest = [c for c in changes if c.fact.observed_at == at]
        dropped = [c for c in contenders if c.fact.observed_at < at]
        contenders = [c for c in contenders if c.fact.observed_at >= at]
        for claim in dropped:
            put(
                claim,
                Standing.LOST,
                f"superseded by the explicit change {latest[0].fact.id}",
                latest[0].fact.id,
            )
            if claim.fact.source not in {c.fact.source for c in latest}:
                stale.append(
                    _flag(
                        claim,
                        "superseded_by_change",
                        "still asserts a value an explicit change replaced",
                    )
                )
    for claim in replaced:
        reason, by = claim.fact.status_reason, by_id[claim.fact.superseded_by or ""]
        put(claim, Standing.LOST, f"superseded ({reason}) by {by.fact.id}", by.fact.id)
        if reason == "explicit change" and claim.fact.source is not by.fact.source:
            stale.append(
                _flag(
                    claim,
                    "superseded_by_change",
                    "still asserts a value an explicit change replaced",
                )
            )

    # 4. weighted evidence
    ranked = rank_values(contenders, spec.multi)
    winner = ranked[0]
    strength = round(ranked[1].support, 4) if len(ranked) > 1 and not spec.multi else 0.0
    if len({canon(c.fact.value) for c in contenders}) > 1:
        step = Step.WEIGHTED_EVIDENCE
    elif any(c.fact.id.startswith("review:") for c in contenders):
        step = Step.REVIEW_RESOLUTION
    elif dropped or replaced:
        step = Step.EXPLICIT_CHANGE
    elif outranked:
        step = Step.SCOPE_PRIORITY
    else:
        step = Step.SINGLE_CLAIM
    bands = policy.bands
    if strength < bands.silent_below:
        outcome = Outcome.ADOPTED
    elif strength <= bands.freeze_above or top in (Tier.TURN, Tier.SESSION):
        outcome = Outcome.PROVISIONAL
    else:
        outcome = Outcome.FROZEN
    value = sorted((r.value for r in ranked), key=canon) if spec.multi else winner.value
    ordered = sorted(contenders, key=_strength_order)
    winners = [c for c in ordered if spec.multi or canon(c.fact.value) == winner.canon]
    for claim in contenders:
        if outcome is Outcome.FROZEN:
            put(
                claim,
                Standing.CONTESTED,
                f"conflict strength {strength} is above {bands.freeze_above}: frozen for review",
            )
        elif claim in winners:
            put(claim, Standing.WON, f"supports the adopted value (support {winner.support:.4f})")
        else:
            own = next(r for r in ranked if r.canon == canon(claim.fact.value))
            put(
                claim,
                Standing.LOST,
                f"its value's support {own.support:.4f} is below the winner's {winner.support:.4f}",
                winners[0].fact.id,
            )
    for claim in outranked:
        put(
            claim,
            Standing.LOST,
            f"a {top.value} claim outranks {claim.tier.value} claims (scope priority)",
            ordered[0].fact.id,
        )

    # 5. staleness
    horizon = policy.staleness_days.get(spec.key, spec.staleness_days)
    past = set()
    for claim in live:
        age = (now - claim.fact.observed_at).total_seconds() / 86400
        long_term = claim.tier is Tier.GLOBAL and claim.fact.kind in _LONG_TERM
        if horizon and long_term and age > horizon:
            past.add(claim.fact.id)
            stale.append(
                _flag(
                    claim,
                    "past_horizon",
                    f"observed {age:.0f} days ago; the horizon is {horizon} days",
                )
            )
    question = None
    if outcome is Outcome.PROVISIONAL:
        question = ask("conflict", value, ranked[1].value if strength else None)
    elif outcome is Outcome.ADOPTED and all(c.fact.id in past for c in winners):
        outcome, question = Outcome.PROVISIONAL, ask("stale", value, None)
    return Resolution(
        **base,
        value=None if outcome is Outcome.FROZEN else value,
        outcome=outcome,
        step=step,
        reason=f"{_WHAT[step]}; conflict strength {strength}: {outcome.value}",
        strength=strength,
        claims=record(),
        question=question,
        support=tuple(
            ValueSupport(value=r.value, support=round(r.support, 4), claims=r.claims)
            for r in ranked
        ),
        stale=tuple(sorted(stale, key=lambda s: (s.why, s.fact_id))),
        review_id=review.review_id if review is not None else None,
    )


_WHAT = {
    Step.WEIGHTED_EVIDENCE: "the best-supported value among concurrent claims",
    Step.EXPLICIT_CHANGE: "the newest explicit change supersedes older claims",
    Step.SCOPE_PRIORITY: "the narrowest scope's claim outranks the others",
    Step.SINGLE_CLAIM: "every counted claim agrees",
    Step.REVIEW_RESOLUTION: "newer evidence agrees with the reviewer's value",
}


def _strength_order(claim: Claim) -> tuple[float, float, str, str]:
    return (
        -round(claim.score, 9),
        -claim.fact.observed_at.timestamp(),
        claim.fact.source.value,
        canon(claim.fact.value),
    )


def _flag(claim: Claim, why: Any, detail: str) -> StaleFlag:
    f = claim.fact
    return StaleFlag(fact_id=f.id, source=f.source, value=f.value, why=why, detail=detail)


def _asker(
    questions: QuestionBook | None,
    spec: KeySpec,
    language: str,
    labels: Mapping[tuple[str, str], str] | None,
) -> Any:
    def ask(purpose: str, value: Any, other: Any) -> Any:
        if questions is None:
            return None
        return questions.render(
            spec.domain, spec.key, purpose, language, value=value, other=other, labels=labels
        )

    return ask
