"""Support for values: the sums weighted evidence compares, ranked without regard to arrival."""

from __future__ import annotations

import json
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
    return _CANON.encode(value)


_CANON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


NONE = canon([])
"""The canonical text of an explicit "none" (an empty list) on a multi-valued key."""


def is_none(value: Any) -> bool:
    """Whether a multi-valued key's value says "none" ("I have no dietary restrictions")."""
    return isinstance(value, list) and not value


def side(value: Any, multi: bool) -> str:
    """The answer a value backs in a conflict (``lineup``): its canonical text, or for a
    multi-valued key "none" or "some".

    >>> side("x", False), side([], True), side(["a"], True)
    ('"x"', '[]', 'some')
    """
    if not multi:
        return canon(value)
    return NONE if is_none(value) else "some"


def by_support(r: Ranked) -> tuple[float, float, float, str]:
    """Best supported first; then the strongest single claim, the newest, the value's text."""
    return (-round(r.support, 9), -round(r.best, 9), -r.newest, r.canon)


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
