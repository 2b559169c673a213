"""Support for values: the sums weighted evidence compares, ranked without regard to arrival."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memkg.arbitration.claims import Claim
from memkg.arbitration.resolution import Tier
from memkg.arbitration.review import Review
from memkg.model.fact import Fact, FactStatus, Provenance, Scope, Source
from memkg.model.keyspec import KeySpec
from memkg.model.weight import Factor, Weight


@dataclass(frozen=True)
class Ranked:
    """One value (or item of a multi-valued key) and the claims that assert it."""

    canon: str
    value: Any
    support: float
    claims: tuple[str, ...]
    best: float
    newest: float


def canon(value: Any) -> str:
    """A value's canonical text: equal values, equal text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def rank_values(claims: Sequence[Claim], multi: bool) -> list[Ranked]:
    """Values by support, best first; ties go to the strongest single claim, then the newest
    claim, then the value's canonical text (never to arrival order)."""
    groups: dict[str, tuple[Any, list[Claim]]] = {}
    for claim in claims:
        value = claim.fact.value
        items = (value if isinstance(value, list) else [value]) if multi else [value]
        for item in items:
            groups.setdefault(canon(item), (item, []))[1].append(claim)
    ranked = []
    for text, (value, members) in groups.items():
        scores = sorted(c.score for c in members)  # summed in one order: arrival-independent
        ranked.append(
            Ranked(
                canon=text,
                value=value,
                support=sum(scores),
                claims=tuple(sorted(c.fact.id for c in members)),
                best=scores[-1],
                newest=max(c.fact.observed_at.timestamp() for c in members),
            )
        )
    return sorted(
        ranked, key=lambda r: (-round(r.support, 9), -round(r.best, 9), -r.newest, r.canon)
    )


def review_claim(review: Review, spec: KeySpec) -> Claim:
    """The reviewer's value as a claim of weight 1, competing with evidence newer than it."""
    at = review.resolved_at or review.opened_at
    fact = Fact(
        id=f"review:{review.review_id}",
        user_id=review.user_id,
        domain=review.domain,
        key=review.key,
        value=review.value,
        kind=spec.kind,
        source=Source.SYSTEM,
        confidence=1.0,
        scope=Scope.GLOBAL,
        observed_at=at,
        recorded_at=at,
        provenance=Provenance(source_ref=f"review:{review.review_id}"),
        sensitivity=spec.sensitivity,
        status=FactStatus.ACTIVE,
        schema_version=spec.version,
        context=dict(review.context),
    )
    detail = f"resolved by {review.reviewer}: {review.note}"
    weight = Weight(
        value=1.0,
        usable=True,
        base=1.0,
        factors=(Factor(name="review", value=1.0, detail=detail),),
    )
    return Claim(fact=fact, weight=weight, tier=Tier.GLOBAL, review_id=review.review_id)
