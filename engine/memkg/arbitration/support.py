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


def lost_reason(own: Ranked, winner: Ranked) -> str:
    """Why the value ``own`` lost to ``winner``: the first element of ``by_support`` (its
    order is the one arbitration ranks by) in which they differ.

    >>> tied = Ranked('"a"', "a", 0.35, ("f1",), 0.35, 10.0)
    >>> lost_reason(Ranked('"b"', "b", 0.3, ("f2",), 0.3, 10.0), tied)
    "its value's support 0.3000 is below the winner's 0.3500"
    >>> lost_reason(Ranked('"b"', "b", 0.35, ("f2",), 0.35, 10.0), tied)  # doctest: +ELLIPSIS
    "its value's support ties the winner's 0.3500, ...: the values' fixed order breaks the tie, ..."
    """
    step = next((i for i, (a, b) in enumerate(zip(by_support(own), by_support(winner),
                                                  strict=True)) if a != b), 3)  # fmt: skip
    if step == 0:
        mine, theirs = _apart(own.support, winner.support)
        return f"its value's support {mine} is below the winner's {theirs}"
    tie = f"its value's support ties the winner's {winner.support:.4f}"
    if step == 1:
        mine, theirs = _apart(own.best, winner.best)
        return f"{tie}; the winner's strongest claim ({theirs}) outweighs its own ({mine})"
    if step == 2:
        return f"{tie}, and so does their strongest claim; the winner's newest claim is newer"
    return (f"{tie}, and so do their strongest and newest claims: the values' fixed order "
            "breaks the tie, never their arrival")  # fmt: skip


def _apart(low: float, high: float) -> tuple[str, str]:
    """Two different numbers to 4 places, or to as many more (up to 9) as tell them apart."""
    for places in range(4, 10):
        if round(low, places) != round(high, places):
            break
    return f"{low:.{places}f}", f"{high:.{places}f}"


def shown(value: float, edges: Sequence[float]) -> float:
    """``value`` to 4 places, or to as many more (up to 9) as keep it on the same side of
    each of ``edges`` as it is: a strength just above a band edge never reads as the edge.

    >>> shown(0.40001, [0.1, 0.4]), shown(0.399925, [0.1, 0.4]), shown(0.41999999, [0.4])
    (0.40001, 0.3999, 0.42)
    """
    for places in range(4, 10):
        rounded = round(value, places)
        if all((rounded < e) == (value < e) and (rounded > e) == (value > e) for e in edges):
            return rounded
    return value


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
