"""Memory arbitration worked out from scratch at each time: the reference ``Lineup`` is held to.

This is ``memory_arbiter.resolve`` and ``MemoryReader.resolve_read`` as they were before the
time-independent part of the policy was lined up once per state of the user's memory
(``memkg.arbitration.lineup``): every claim weighed, sorted, grouped and placed on each
call. The engine keeps one implementation; differential tests compare it with this one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from memkg.arbitration.claims import (
    COUNTED,
    Claim,
    SignalLookup,
    build_claims,
    current_turn,
    slot,
    tier_of,
)
from memkg.arbitration.policy import Policy
from memkg.arbitration.questions import QuestionBook
from memkg.arbitration.reader import KeyFacts, MemoryReader
from memkg.arbitration.resolution import (
    ClaimScore,
    Outcome,
    Question,
    Resolution,
    StaleFlag,
    Standing,
    Step,
    Tier,
    ValueSupport,
)
from memkg.arbitration.review import Review, ReviewStatus, latest_review
from memkg.arbitration.support import NONE, canon, is_none, review_claim, side
from memkg.model.fact import REPLACING, FactStatus, Kind, SupersedeReason
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
_ORDER = {Standing.WON: 0, Standing.CONTESTED: 1, Standing.LOST: 2, Standing.PENDING: 3}
Ask = Callable[[str, Any, Any], Question | None]


def resolve_read(
    reader: MemoryReader,
    key: KeyFacts,
    signals: SignalLookup,
    reviews: Sequence[Review],
    spec: KeySpec,
    now: datetime,
    *,
    user_id: str,
    session_id: str | None = None,
    turn: str | None = None,
    context: Mapping[str, str] | None = None,
    language: str | None = None,
) -> Resolution:
    """``MemoryReader.resolve_read``, every claim weighed and the slot resolved afresh."""
    turn_ids = current_turn(key.facts, session_id, turn)
    want = slot(context or {}, spec.context)
    # a context slot is read on its own where a fact the read weighs, retracted or not, bears
    # it; else the read falls back to the general slot
    if want and not any(slot(f.context, spec.context) == want
                        and tier_of(f, session_id, turn_ids) is not None
                        for f in key.facts if f.status is not FactStatus.RETRACTED):  # fmt: skip
        want = {}
    policy, params = reader.policy.for_domain(spec.domain), reader.params(spec.domain)
    claims = build_claims(key.taking, now=now, params=params, signals=signals,
                          session_id=session_id, turn=turn, turn_ids=turn_ids)  # fmt: skip
    return resolve(claims, policy, now, spec, user_id=user_id, context=want,
                   default=None if want else reader.defaults.get(spec.domain, spec.key),
                   review=latest_review(reviews, spec.domain, spec.key, want),
                   questions=reader.questions, language=language,
                   labels=reader.labels)  # fmt: skip


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
    """``memory_arbiter.resolve`` from scratch (its docstring states the policy)."""
    want = slot(context or {}, spec.context)
    base: dict[str, Any] = {"user_id": user_id, "domain": spec.domain, "key": spec.key,
                            "context": want, "multi": spec.multi, "decided_at": now}  # fmt: skip
    ask = _asker(questions, spec, language or policy.language, labels)
    sheet = _Sheet()
    live, pending, replaced = _taking_part(claims, spec, user_id, want, now)
    for claim in pending:
        sheet.put(claim, Standing.PENDING, "awaits the user's confirmation; not counted")

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
        # a claim replaced by a settled one is left out with it, as when all are settled
        remaining = {c.fact.id for c in live}
        replaced = [c for c in replaced if c.fact.superseded_by in remaining]
        live.append(review_claim(review, spec))

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
                stale.append(_stale_flag(claim, "superseded_by_change", _STALE))
    by_id = {c.fact.id: c for c in live}
    for claim in replaced:
        reason, newer = claim.fact.status_reason, by_id[claim.fact.superseded_by or ""].fact
        sheet.put(claim, Standing.LOST, f"superseded ({reason}) by {newer.id}", newer.id)
        explicit = claim.fact.supersede_reason is SupersedeReason.EXPLICIT_CHANGE
        if explicit and claim.fact.source != newer.source:
            stale.append(_stale_flag(claim, "superseded_by_change", _STALE))

    ranked = _rank_values(contenders, spec.multi)
    sides = _rank_sides(contenders, spec.multi, ranked)
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
    backs = {c.fact.id: side(c.fact.value, spec.multi) for c in contenders}
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

    horizon = policy.staleness_days.get(spec.key, spec.staleness_days)
    past = set()
    for claim in live:
        age = (now - claim.fact.observed_at).total_seconds() / 86400
        long_term = claim.tier is Tier.GLOBAL and claim.fact.kind in _LONG_TERM
        if horizon is not None and long_term and age > horizon:
            past.add(claim.fact.id)
            stale.append(_stale_flag(claim, "past_horizon", f"observed {age:.0f} days ago; "
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


class _Taking(NamedTuple):
    live: list[Claim]
    pending: list[Claim]
    replaced: list[Claim]


def _taking_part(
    claims: Sequence[Claim], spec: KeySpec, user_id: str, want: Mapping[str, str], now: datetime
) -> _Taking:
    taking = _Taking([], [], [])
    for claim in claims:
        f = claim.fact
        if (f.user_id, f.domain, f.key) != (user_id, spec.domain, spec.key):
            continue
        if slot(f.context, spec.context) != want:
            continue
        if f.valid_until is not None and f.valid_until <= now:
            continue
        if f.status is FactStatus.PENDING_CONFIRMATION:
            taking.pending.append(claim)
        elif f.status in COUNTED:
            taking.live.append(claim)
        elif f.status is FactStatus.SUPERSEDED and f.supersede_reason in REPLACING:
            taking.replaced.append(claim)
    live = {c.fact.id for c in taking.live}
    taking.replaced[:] = [c for c in taking.replaced if c.fact.superseded_by in live]
    return taking


@dataclass(frozen=True)
class _Ranked:
    canon: str
    value: Any
    support: float
    claims: tuple[str, ...]
    best: float
    newest: float


def _ranked(text: str, value: Any, members: Sequence[Claim]) -> _Ranked:
    scores = sorted(c.score for c in members)
    return _Ranked(canon=text, value=value, support=sum(scores),
                   claims=tuple(sorted(c.fact.id for c in members)), best=scores[-1],
                   newest=max(c.fact.observed_at.timestamp() for c in members))  # fmt: skip


def _order(r: _Ranked) -> tuple[float, float, float, str]:
    return (-round(r.support, 9), -round(r.best, 9), -r.newest, r.canon)


def _rank_values(claims: Sequence[Claim], multi: bool) -> list[_Ranked]:
    groups: dict[str, tuple[Any, list[Claim]]] = {}
    for claim in claims:
        value = claim.fact.value
        if multi and is_none(value):
            groups.setdefault("\x00none", ([], []))[1].append(claim)
            continue
        items = (value if isinstance(value, list) else [value]) if multi else [value]
        for item in items:
            groups.setdefault(canon(item), (item, []))[1].append(claim)
    ranked = [
        _ranked(NONE if text == "\x00none" else text, value, members)
        for text, (value, members) in groups.items()
    ]
    return sorted(ranked, key=_order)


def _rank_sides(claims: Sequence[Claim], multi: bool, values: list[_Ranked]) -> list[_Ranked]:
    if not multi:
        return values
    none = [c for c in claims if is_none(c.fact.value)]
    some = [c for c in claims if not is_none(c.fact.value)]
    sides = [_ranked(NONE, [], none)] if none else []
    if some:
        items = {canon(i): i for c in some for i in _items(c.fact.value)}
        union = [items[k] for k in sorted(items)]
        sides.append(_ranked(canon(union), union, some))
    return sorted(sides, key=_order)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _side_text(ranked: _Ranked, multi: bool) -> str:
    if not multi:
        return str(ranked.canon)
    return NONE if ranked.canon == NONE else "some"


def _strongest(claim: Claim) -> tuple[float, float, str, str, str]:
    f = claim.fact
    return (-round(claim.score, 9), -f.observed_at.timestamp(), f.source.value, canon(f.value),
            f.id)  # fmt: skip


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


class _Sheet:
    def __init__(self) -> None:
        self._lines: dict[str, ClaimScore] = {}

    def put(self, claim: Claim, standing: Standing, reason: str, by: str | None = None) -> None:
        f = claim.fact
        self._lines[f.id] = ClaimScore(
            fact_id=f.id, value=f.value, source=f.source, kind=f.kind, scope=f.scope,
            tier=claim.tier, session_id=f.session_id, context=dict(f.context),
            confidence=f.confidence, observed_at=f.observed_at, status=f.status,
            change=f.change, score=round(claim.score, 4), weight=claim.weight,
            standing=standing, reason=reason, beaten_by=by,
        )  # fmt: skip

    def with_standing(self, standing: Standing) -> list[ClaimScore]:
        return [line for line in self._lines.values() if line.standing is standing]

    def lines(self) -> tuple[ClaimScore, ...]:
        return tuple(
            sorted(self._lines.values(), key=lambda c: (_ORDER[c.standing], -c.score, c.fact_id))
        )


def _stale_flag(claim: Claim, why: str, detail: str) -> StaleFlag:
    f = claim.fact
    return StaleFlag(fact_id=f.id, source=f.source, value=f.value, why=why, detail=detail)
