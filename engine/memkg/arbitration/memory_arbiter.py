"""Which memory holds when the claims about one key disagree (DESIGN section 5)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memkg.arbitration.claims import Claim, slot, taking_part
from memkg.arbitration.policy import Policy
from memkg.arbitration.questions import QuestionBook
from memkg.arbitration.resolution import (
    Outcome,
    Question,
    Resolution,
    StaleFlag,
    Standing,
    Step,
    Tier,
    ValueSupport,
)  # fmt: skip
from memkg.arbitration.review import Review, ReviewStatus
from memkg.arbitration.scoresheet import ScoreSheet, stale_flag
from memkg.arbitration.support import (
    NONE,
    canon,
    rank_sides,
    rank_values,
    review_claim,
    side,
)
from memkg.model.fact import Kind, SupersedeReason
from memkg.model.keyspec import KeySpec

_LONG_TERM = (Kind.FACT, Kind.PREFERENCE)
_STALE = "still asserts a value an explicit change replaced"
_WHAT = {
    Step.WEIGHTED_EVIDENCE: "the best-supported value among concurrent claims",
    Step.EXPLICIT_CHANGE: "the newest explicit change supersedes older claims",
    Step.SCOPE_PRIORITY: "the narrowest scope's claim outranks the others",
    Step.SINGLE_CLAIM: "every counted claim agrees",
    Step.REVIEW_RESOLUTION: "newer evidence agrees with the reviewer's value",
}
Ask = Callable[[str, Any, Any], Question | None]


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
       Multi-valued keys adopt the union of the asserted items; an empty list is an explicit
       "none" that competes with them as one answer against another, with the same bands
       (``weighted_evidence``; ``single_claim`` when every counted claim agrees).
    5. Staleness: long-term claims past the key's horizon are flagged; a winner backed only
       by stale claims is adopted provisionally with a reconfirmation question.
    """
    want = slot(context or {}, spec.context)
    base: dict[str, Any] = {"user_id": user_id, "domain": spec.domain, "key": spec.key,
                            "context": want, "multi": spec.multi, "decided_at": now}  # fmt: skip
    ask = _asker(questions, spec, language or policy.language, labels)
    sheet = ScoreSheet()
    live, pending, replaced = taking_part(claims, spec, user_id, want, now)
    for claim in pending:
        sheet.put(claim, Standing.PENDING, "awaits the user's confirmation; not counted")

    # 1. review
    if review is not None and review.status is ReviewStatus.OPEN:
        for claim in live:
            sheet.put(claim, Standing.CONTESTED, f"key frozen by review {review.review_id}")
        return Resolution(**base, outcome=Outcome.FROZEN, step=Step.WEIGHTED_EVIDENCE,
                          reason=f"frozen for human review {review.review_id}: {review.reason}",
                          strength=review.strength, claims=sheet.lines(),
                          review_id=review.review_id)  # fmt: skip
    if review is not None and review.resolved_at is not None:
        until, by = review.resolved_at, f"review:{review.review_id}"
        settled = [c for c in live if c.tier is Tier.GLOBAL and c.fact.recorded_at <= until]
        for claim in settled:
            agrees = canon(claim.fact.value) == canon(review.value)
            sheet.put(claim, Standing.WON if agrees else Standing.LOST,
                      f"settled by review {review.review_id}", None if agrees else by)  # fmt: skip
        live = [c for c in live if c not in settled]
        if not live:
            return Resolution(**base, value=review.value, outcome=Outcome.ADOPTED,
                              step=Step.REVIEW_RESOLUTION, claims=sheet.lines(),
                              reason=f"{review.reviewer} resolved review {review.review_id}: "
                              f"{review.note}", review_id=review.review_id)  # fmt: skip
        live.append(review_claim(review, spec))

    # 2. scope priority (the role default is the lowest scope)
    if not live:
        waiting = sorted(sheet.with_standing(Standing.PENDING),
                         key=lambda s: (s.observed_at, canon(s.value)))  # fmt: skip
        question = ask("confirm", waiting[-1].value, None) if waiting else None
        if default is not None:
            return Resolution(**base, value=default, outcome=Outcome.DEFAULT,
                              step=Step.ROLE_DEFAULT, reason="no claims: the domain's role "
                              "default", claims=sheet.lines(), question=question)  # fmt: skip
        return Resolution(**base, outcome=Outcome.NO_CLAIMS, step=Step.NO_EVIDENCE,
                          reason="no claims and no role default", claims=sheet.lines(),
                          question=question)  # fmt: skip
    top = max(live, key=lambda c: c.tier.rank).tier
    contenders = [c for c in live if c.tier is top]
    outranked = [c for c in live if c.tier is not top]

    # 3. explicit change
    stale: list[StaleFlag] = []
    changes = sorted((c for c in contenders if c.fact.change), key=_strongest)
    at = max((c.fact.observed_at for c in changes), default=None)
    dropped = [c for c in contenders if at is not None and c.fact.observed_at < at]
    if dropped:
        latest = [c for c in changes if c.fact.observed_at == at]
        contenders = [c for c in contenders if c not in dropped]
        for claim in dropped:
            sheet.put(claim, Standing.LOST, f"superseded by the explicit change "
                      f"{latest[0].fact.id}", latest[0].fact.id)  # fmt: skip
            if claim.fact.source not in {c.fact.source for c in latest}:
                stale.append(stale_flag(claim, "superseded_by_change", _STALE))
    by_id = {c.fact.id: c for c in live}
    for claim in replaced:
        reason, newer = claim.fact.status_reason, by_id[claim.fact.superseded_by or ""].fact
        sheet.put(claim, Standing.LOST, f"superseded ({reason}) by {newer.id}", newer.id)
        explicit = claim.fact.supersede_reason is SupersedeReason.EXPLICIT_CHANGE
        if explicit and claim.fact.source != newer.source:
            stale.append(stale_flag(claim, "superseded_by_change", _STALE))

    # 4. weighted evidence
    ranked = rank_values(contenders, spec.multi)
    sides = rank_sides(contenders, spec.multi, ranked)
    winner, dissent = sides[0], sides[1] if len(sides) > 1 else None
    strength = round(dissent.support, 4) if dissent is not None else 0.0
    if len({canon(c.fact.value) for c in contenders}) > 1:
        step = Step.WEIGHTED_EVIDENCE
    elif any(c.review_id is not None for c in contenders):
        step = Step.REVIEW_RESOLUTION
    elif dropped or replaced:
        step = Step.EXPLICIT_CHANGE
    else:
        step = Step.SCOPE_PRIORITY if outranked else Step.SINGLE_CLAIM
    bands = policy.bands
    if strength < bands.silent_below:
        outcome = Outcome.ADOPTED
    elif strength <= bands.freeze_above or top in (Tier.TURN, Tier.SESSION):
        outcome = Outcome.PROVISIONAL
    else:
        outcome = Outcome.FROZEN
    value = winner.value
    ordered = sorted(contenders, key=_strongest)
    backs = {c.fact.id: _side(c, spec.multi) for c in contenders}
    winners = [c for c in ordered if backs[c.fact.id] == _side_text(winner, spec.multi)]
    for claim in contenders:
        if outcome is Outcome.FROZEN:
            sheet.put(claim, Standing.CONTESTED, f"conflict strength {strength} is above "
                      f"{bands.freeze_above}: frozen for review")  # fmt: skip
        elif claim in winners:
            sheet.put(claim, Standing.WON, f"supports the adopted value ({winner.support:.4f})")
        else:
            own = next(r for r in sides if _side_text(r, spec.multi) == backs[claim.fact.id])
            sheet.put(claim, Standing.LOST, f"its value's support {own.support:.4f} is below "
                      f"the winner's {winner.support:.4f}", winners[0].fact.id)  # fmt: skip
    for claim in outranked:
        sheet.put(claim, Standing.LOST, f"a {top.value} claim outranks {claim.tier.value} "
                  "claims (scope priority)", ordered[0].fact.id)  # fmt: skip

    # 5. staleness
    horizon = policy.staleness_days.get(spec.key, spec.staleness_days)
    past = set()
    for claim in live:
        age = (now - claim.fact.observed_at).total_seconds() / 86400
        long_term = claim.tier is Tier.GLOBAL and claim.fact.kind in _LONG_TERM
        if horizon is not None and long_term and age > horizon:
            past.add(claim.fact.id)
            stale.append(stale_flag(claim, "past_horizon", f"observed {age:.0f} days ago; "
                                    f"the horizon is {horizon} days"))  # fmt: skip
    question = None
    if outcome is Outcome.PROVISIONAL:
        question = ask("conflict", value, dissent.value if dissent is not None else None)
    elif outcome is Outcome.ADOPTED and all(c.fact.id in past for c in winners):
        outcome, question = Outcome.PROVISIONAL, ask("stale", value, None)
    return Resolution(
        **base, value=None if outcome is Outcome.FROZEN else value, outcome=outcome, step=step,
        reason=f"{_WHAT[step]}; conflict strength {strength}: {outcome.value}",
        strength=strength, claims=sheet.lines(), question=question,
        support=tuple(ValueSupport(value=r.value, support=round(r.support, 4), claims=r.claims)
                      for r in ranked),
        stale=tuple(sorted(stale, key=lambda s: (s.why, s.fact_id))),
        review_id=review.review_id if review is not None else None,
    )  # fmt: skip


def _side(claim: Claim, multi: bool) -> str:
    return side(claim.fact.value, multi)


def _side_text(ranked: Any, multi: bool) -> str:
    if not multi:
        return str(ranked.canon)
    return NONE if ranked.canon == NONE else "some"


def _strongest(claim: Claim) -> tuple[float, float, str, str, str]:
    """Strongest first; then the newest, then source, value and id: never arrival order."""
    f = claim.fact
    return (
        -round(claim.score, 9),
        -f.observed_at.timestamp(),
        f.source.value,
        canon(f.value),
        f.id,
    )


def _asker(
    questions: QuestionBook | None,
    spec: KeySpec,
    language: str,
    labels: Mapping[tuple[str, str], str] | None,
) -> Ask:
    def ask(purpose: str, value: Any, other: Any) -> Question | None:
        if questions is None:
            return None
        return questions.render(spec.domain, spec.key, purpose, language, value=value,
                                other=other, labels=labels)  # fmt: skip

    return ask
