"""One key slot's claims lined up for arbitration: what does not move with time, worked out once.

``memory_arbiter.resolve`` states the policy. Most of it depends only on the claims: which take
part in the slot, their tiers, which are pending or replaced, what an open or settled review
does to them, which tier wins scope priority, which explicit change supersedes what, which
values and sides the claims back. The rest moves with time: each claim's weight (decay,
signal ages), hence supports, the winner, the conflict strength, the outcome, staleness
ages and the record's text. ``Lineup`` does the first part once; ``Lineup.resolve(now)`` the
second for each time, with the same operations in the same order as a resolution from
scratch, so the record is the same for every ``now``. A reader keeps a lineup while the
user's memory stands (``reader.KeyFacts``); expiry is the one way time changes who takes part,
so a lineup keeps one arrangement per set of expired claims.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memkg.arbitration.claims import COUNTED, Claim, slot
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
    Ranked,
    by_support,
    canon,
    is_none,
    lost_reason,
    review_claim,
    shown,
    side,
)
from memkg.model.fact import REPLACING, Fact, FactStatus, Kind, SupersedeReason
from memkg.model.keyspec import KeySpec
from memkg.model.weight import Signal, Weight, WeightParams, claim_weight

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


class Entrant:
    """A fact placed in a tier for one read, weighed on demand: with the weight it was given,
    or with its signals at the time asked."""

    __slots__ = ("fact", "params", "review_id", "signals", "tier", "weight")

    def __init__(
        self,
        fact: Fact,
        tier: Tier,
        *,
        weight: Weight | None = None,
        signals: Sequence[Signal] = (),
        params: WeightParams | None = None,
        review_id: str | None = None,
    ) -> None:
        self.fact, self.tier, self.review_id = fact, tier, review_id
        self.weight, self.signals, self.params = weight, signals, params

    @classmethod
    def of(cls, claim: Claim) -> Entrant:
        """A claim already weighed: its weight holds whatever the time."""
        return cls(claim.fact, claim.tier, weight=claim.weight, review_id=claim.review_id)

    def weigh(self, now: datetime) -> Weight:
        if self.weight is not None:
            return self.weight
        f, params = self.fact, self.params
        assert params is not None  # an entrant without a weight is given its parameters
        return claim_weight(f.confidence, f.source.value, f.observed_at, self.signals, now, params)


class _Group:
    """Claims backing one value (or side): its ``Ranked`` at a time sums their scores."""

    __slots__ = ("canon", "claims", "fresh", "members", "newest", "value")

    def __init__(
        self,
        text: str,
        value: Any,
        members: list[int],
        entrants: list[Entrant],
        *,
        fresh: bool = False,
    ) -> None:
        self.canon, self.value, self.members, self.fresh = text, value, members, fresh
        self.claims = tuple(sorted(entrants[i].fact.id for i in members))
        self.newest = max(entrants[i].fact.observed_at.timestamp() for i in members)

    def ranked(self, scores: list[float]) -> Ranked:
        summed = sorted(scores[i] for i in self.members)  # summed in one order: arrival-independent
        # a side's value is a list made for it: each resolution gets its own, as it did when
        # every resolution was worked out from scratch
        value = list(self.value) if self.fresh else self.value
        return Ranked(self.canon, value, sum(summed), self.claims, summed[-1], self.newest)


class Lineup:
    """The claims of one ``(user, domain, key, context)`` slot, arranged for any time."""

    def __init__(
        self,
        entrants: Sequence[Entrant],
        policy: Policy,
        spec: KeySpec,
        *,
        user_id: str,
        context: Mapping[str, str] | None = None,
        default: Any = None,
        review: Review | None = None,
        questions: QuestionBook | None = None,
        language: str | None = None,
        labels: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        self.policy, self.spec, self.default, self.review = policy, spec, default, review
        want = slot(context or {}, spec.context)
        self.base: dict[str, Any] = {"user_id": user_id, "domain": spec.domain, "key": spec.key,
                                     "context": want, "multi": spec.multi}  # fmt: skip
        self.ask = _asker(questions, spec, language or policy.language, labels)
        who = (user_id, spec.domain, spec.key)
        self.mine = [
            e
            for e in entrants
            if (e.fact.user_id, e.fact.domain, e.fact.key) == who
            and slot(e.fact.context, spec.context) == want
        ]
        self.expiring = [
            (i, until) for i, e in enumerate(self.mine) if (until := e.fact.valid_until) is not None
        ]
        self._arranged: dict[frozenset[int], _Arranged] = {}

    def resolve(self, now: datetime) -> Resolution:
        """The slot resolved at ``now``: ``memory_arbiter.resolve``'s record."""
        gone = frozenset(i for i, until in self.expiring if until <= now)
        arranged = self._arranged.get(gone)
        if arranged is None:
            kept = [e for i, e in enumerate(self.mine) if i not in gone]
            arranged = self._arranged[gone] = _Arranged(self, kept)
        return arranged.resolve(now)


class _Arranged:
    """A lineup's claims that have not expired, with every part of the policy that does not
    depend on their weights worked out."""

    def __init__(self, lineup: Lineup, kept: list[Entrant]) -> None:
        spec, review, multi = lineup.spec, lineup.review, lineup.spec.multi
        self.lineup = lineup
        pending = [e for e in kept if e.fact.status is FactStatus.PENDING_CONFIRMATION]
        live = [e for e in kept if e.fact.status in COUNTED]
        counted = {e.fact.id for e in live}
        replaced = [
            e
            for e in kept
            if e.fact.status is FactStatus.SUPERSEDED
            and e.fact.supersede_reason in REPLACING
            and e.fact.superseded_by in counted
        ]
        self.entrants: list[Entrant] = []
        """Every claim listed, in the order first listed; the rest refer to them by index."""
        index: dict[int, int] = {}

        def at(entrant: Entrant) -> int:
            found = index.get(id(entrant))
            if found is None:
                found = index[id(entrant)] = len(self.entrants)
                self.entrants.append(entrant)
            return found

        self.pending = [at(e) for e in pending]
        self.kind = "main"
        self.settled: list[tuple[int, Standing, str, str | None]] = []
        if review is not None and review.status is ReviewStatus.OPEN:
            self.kind, self.live = "open", [at(e) for e in live]
            return
        if review is not None and review.resolved_at is not None:
            until, by = review.resolved_at, f"review:{review.review_id}"
            settled = [e for e in live if e.tier is Tier.GLOBAL and e.fact.recorded_at <= until]
            for e in settled:
                agrees = canon(e.fact.value) == canon(review.value)
                self.settled.append((at(e), Standing.WON if agrees else Standing.LOST,
                                     f"settled by review {review.review_id}",
                                     None if agrees else by))  # fmt: skip
            live = [e for e in live if e not in settled]
            if not live:
                self.kind = "settled"
                return
            # a claim replaced by a settled one is left out with it, as when all are settled
            remaining = {e.fact.id for e in live}
            replaced = [e for e in replaced if e.fact.superseded_by in remaining]
            live.append(Entrant.of(review_claim(review, spec)))
        if not live:
            self.kind = "empty"
            standing = {self.entrants[i].fact.id: (Standing.PENDING, i) for i in self.pending}
            standing.update({self.entrants[i].fact.id: (s, i) for i, s, _, _ in self.settled})
            facts = [self.entrants[i].fact for s, i in standing.values() if s is Standing.PENDING]
            waiting = sorted(facts, key=lambda f: (f.observed_at, canon(f.value)))
            self.question = lineup.ask("confirm", waiting[-1].value, None) if waiting else None
            return
        self._arrange(lineup, [at(e) for e in live], [at(e) for e in replaced], multi, at)

    def _arrange(
        self,
        lineup: Lineup,
        live: list[int],
        replaced: list[int],
        multi: bool,
        at: Callable[[Entrant], int],
    ) -> None:
        entrants = self.entrants
        self.live = live
        self.top = top = max((entrants[i].tier for i in live), key=lambda t: t.rank)
        contenders = [i for i in live if entrants[i].tier is top]
        self.outranked = [
            (i, f"a {top.value} claim outranks {entrants[i].tier.value} claims (scope priority)")
            for i in live
            if entrants[i].tier is not top
        ]
        self.strongest = [
            (-e.fact.observed_at.timestamp(), e.fact.source.value, canon(e.fact.value), e.fact.id)
            for e in entrants
        ]

        # explicit change: who supersedes whom is fixed; which of several changes made at
        # the same moment is named depends on their weights
        changes = [i for i in contenders if entrants[i].fact.change]
        moment = max((entrants[i].fact.observed_at for i in changes), default=None)
        dropped = [i for i in contenders if moment is not None
                   and entrants[i].fact.observed_at < moment]  # fmt: skip
        self.latest: list[int] = []
        self.stale: list[StaleFlag] = []
        self.dropped = dropped
        if dropped:
            self.latest = [i for i in changes if entrants[i].fact.observed_at == moment]
            contenders = [i for i in contenders if i not in dropped]
            sources = {entrants[i].fact.source for i in self.latest}
            for i in dropped:
                if entrants[i].fact.source not in sources:
                    self.stale.append(stale_flag(entrants[i].fact, "superseded_by_change", _STALE))
        by_id = {entrants[i].fact.id: entrants[i] for i in live}
        self.replaced: list[tuple[int, str, str]] = []
        for i in replaced:
            fact = entrants[i].fact
            reason, newer = fact.status_reason, by_id[fact.superseded_by or ""].fact
            self.replaced.append((i, f"superseded ({reason}) by {newer.id}", newer.id))
            explicit = fact.supersede_reason is SupersedeReason.EXPLICIT_CHANGE
            if explicit and fact.source != newer.source:
                self.stale.append(stale_flag(fact, "superseded_by_change", _STALE))
        self.contenders = contenders

        # weighted evidence: the values and sides the claims back
        self.values = _values(contenders, entrants, multi)
        self.sides = self.values if not multi else _sides(contenders, entrants)
        values = {canon(entrants[i].fact.value) for i in contenders}
        if len(values) > 1:
            self.step = Step.WEIGHTED_EVIDENCE
        elif any(entrants[i].review_id is not None for i in contenders):
            self.step = Step.REVIEW_RESOLUTION
        elif dropped or replaced:
            self.step = Step.EXPLICIT_CHANGE
        else:
            self.step = Step.SCOPE_PRIORITY if self.outranked else Step.SINGLE_CLAIM
        self.backs = {entrants[i].fact.id: side(entrants[i].fact.value, multi) for i in contenders}

        # staleness: which claims can pass the horizon
        spec = lineup.spec
        self.horizon = horizon = lineup.policy.staleness_days.get(spec.key, spec.staleness_days)
        self.aging = [
            i
            for i in live
            if horizon is not None
            and entrants[i].tier is Tier.GLOBAL
            and entrants[i].fact.kind in _LONG_TERM
        ]

    def resolve(self, now: datetime) -> Resolution:
        lineup = self.lineup
        weights = [e.weigh(now) for e in self.entrants]
        scores = [w.value for w in weights]
        sheet = ScoreSheet()
        for i in self.pending:
            sheet.line(self.entrants[i], weights[i], Standing.PENDING,
                       "awaits the user's confirmation; not counted")  # fmt: skip
        base, review = {**lineup.base, "decided_at": now}, lineup.review
        if self.kind == "open":
            assert review is not None
            for i in self.live:
                sheet.line(self.entrants[i], weights[i], Standing.CONTESTED,
                           f"key frozen by review {review.review_id}")  # fmt: skip
            return Resolution(**base, outcome=Outcome.FROZEN, step=Step.WEIGHTED_EVIDENCE,
                              reason=f"frozen for human review {review.review_id}: "
                              f"{review.reason}", strength=review.strength, claims=sheet.lines(),
                              review_id=review.review_id)  # fmt: skip
        for i, standing, reason, by in self.settled:
            sheet.line(self.entrants[i], weights[i], standing, reason, by)
        if self.kind == "settled":
            assert review is not None
            return Resolution(**base, value=review.value, outcome=Outcome.ADOPTED,
                              step=Step.REVIEW_RESOLUTION, claims=sheet.lines(),
                              reason=f"{review.reviewer} resolved review {review.review_id}: "
                              f"{review.note}", review_id=review.review_id)  # fmt: skip
        if self.kind == "empty":
            if lineup.default is not None:
                return Resolution(**base, value=lineup.default, outcome=Outcome.DEFAULT,
                                  step=Step.ROLE_DEFAULT, reason="no claims: the domain's role "
                                  "default", claims=sheet.lines(),
                                  question=self.question)  # fmt: skip
            return Resolution(**base, outcome=Outcome.NO_CLAIMS, step=Step.NO_EVIDENCE,
                              reason="no claims and no role default", claims=sheet.lines(),
                              question=self.question)  # fmt: skip
        return self._weighted(now, weights, scores, sheet, base)

    def _weighted(
        self,
        now: datetime,
        weights: list[Weight],
        scores: list[float],
        sheet: ScoreSheet,
        base: dict[str, Any],
    ) -> Resolution:
        lineup, entrants, multi = self.lineup, self.entrants, self.lineup.spec.multi
        review = lineup.review

        def strongest(i: int) -> tuple[Any, ...]:
            return (-round(scores[i], 9), *self.strongest[i])

        stale = list(self.stale)
        if self.dropped:
            named = entrants[min(self.latest, key=strongest)].fact.id
            for i in self.dropped:
                sheet.line(entrants[i], weights[i], Standing.LOST,
                           f"superseded by the explicit change {named}", named)  # fmt: skip
        for i, reason, by in self.replaced:
            sheet.line(entrants[i], weights[i], Standing.LOST, reason, by)

        ranked = sorted((g.ranked(scores) for g in self.values), key=by_support)
        sides = ranked
        if multi:
            sides = sorted((g.ranked(scores) for g in self.sides), key=by_support)
        winner, dissent = sides[0], sides[1] if len(sides) > 1 else None
        # the bands see the support as summed (to the 9 places ranking reads, past float
        # noise); the record shows it as ``shown`` rounds it, on the same side of each edge
        support = round(dissent.support, 9) if dissent is not None else 0.0
        bands = lineup.policy.bands
        if support < bands.silent_below:
            outcome = Outcome.ADOPTED
        elif support <= bands.freeze_above or self.top in (Tier.TURN, Tier.SESSION):
            outcome = Outcome.PROVISIONAL
        else:
            outcome = Outcome.FROZEN
        strength = shown(support, (bands.silent_below, bands.freeze_above))
        value = winner.value
        ordered = sorted(self.contenders, key=strongest)
        backs, won = self.backs, _side_text(winner, multi)
        winners = [i for i in ordered if backs[entrants[i].fact.id] == won]
        for i in self.contenders:
            backed = backs[entrants[i].fact.id]
            if outcome is Outcome.FROZEN:
                sheet.line(entrants[i], weights[i], Standing.CONTESTED,
                           f"conflict strength {strength} is above {bands.freeze_above}: "
                           "frozen for review")  # fmt: skip
            elif backed == won:
                sheet.line(entrants[i], weights[i], Standing.WON,
                           f"supports the adopted value ({winner.support:.4f})")  # fmt: skip
            else:
                own = next(r for r in sides if _side_text(r, multi) == backed)
                sheet.line(entrants[i], weights[i], Standing.LOST, lost_reason(own, winner),
                           entrants[winners[0]].fact.id)  # fmt: skip
        for i, reason in self.outranked:
            sheet.line(entrants[i], weights[i], Standing.LOST, reason, entrants[ordered[0]].fact.id)

        horizon, past = self.horizon, set()
        for i in self.aging:
            age = (now - entrants[i].fact.observed_at).total_seconds() / 86400
            if age > horizon:  # type: ignore[operator]  # only claims that can age are listed
                past.add(entrants[i].fact.id)
                stale.append(stale_flag(entrants[i].fact, "past_horizon", f"observed {age:.0f} "
                                        f"days ago; the horizon is {horizon} days"))  # fmt: skip
        question = None
        if outcome is Outcome.PROVISIONAL:
            question = lineup.ask("conflict", value, dissent.value if dissent is not None else None)
        elif outcome is Outcome.ADOPTED and all(entrants[i].fact.id in past for i in winners):
            outcome, question = Outcome.PROVISIONAL, lineup.ask("stale", value, None)
        return Resolution(
            **base, value=None if outcome is Outcome.FROZEN else value, outcome=outcome,
            step=self.step, reason=f"{_WHAT[self.step]}; conflict strength {strength}: "
            f"{outcome.value}", strength=strength, claims=sheet.lines(), question=question,
            support=tuple(ValueSupport(value=r.value, support=round(r.support, 4),
                                       claims=r.claims) for r in ranked),
            stale=tuple(sorted(stale, key=lambda s: (s.why, s.fact_id))),
            review_id=review.review_id if review is not None else None,
        )  # fmt: skip


def _values(contenders: list[int], entrants: list[Entrant], multi: bool) -> list[_Group]:
    """The values the contenders back, in the order first met: for a multi-valued key each
    item on its own, and the claims saying "none" (an empty list) as one more value whose
    value is the empty list."""
    groups: dict[str, tuple[Any, list[int]]] = {}
    for i in contenders:
        value = entrants[i].fact.value
        if multi and is_none(value):
            groups.setdefault("\x00none", ([], []))[1].append(i)
            continue
        items = (value if isinstance(value, list) else [value]) if multi else [value]
        for item in items:
            groups.setdefault(canon(item), (item, []))[1].append(i)
    return [
        _Group(text, value, members, entrants)
        if text != "\x00none"
        else _Group(NONE, value, members, entrants, fresh=True)
        for text, (value, members) in groups.items()
    ]


def _sides(contenders: list[int], entrants: list[Entrant]) -> list[_Group]:
    """The competing answers of a multi-valued key: "some" (the union of the asserted items,
    each claim counted once) against "none" (the claims of an empty list), which is where a
    multi-valued key can conflict at all."""
    none = [i for i in contenders if is_none(entrants[i].fact.value)]
    some = [i for i in contenders if not is_none(entrants[i].fact.value)]
    sides = [_Group(NONE, [], none, entrants, fresh=True)] if none else []
    if some:
        items = {canon(v): v for i in some for v in _items(entrants[i].fact.value)}
        union = [items[k] for k in sorted(items)]
        sides.append(_Group(canon(union), union, some, entrants, fresh=True))
    return sides


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _side_text(ranked: Ranked, multi: bool) -> str:
    if not multi:
        return str(ranked.canon)
    return NONE if ranked.canon == NONE else "some"


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
