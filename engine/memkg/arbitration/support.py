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
    """The answer a value backs in a conflict (``rank_sides``): its canonical text, or for a
    multi-valued key "none" or "some".

    >>> side("x", False), side([], True), side(["a"], True)
    ('"x"', '[]', 'some')
    """
    if not multi:
        return canon(value)
    return NONE if is_none(value) else "some"


def _ranked(text: str, value: Any, members: Sequence[Claim]) -> Ranked:
    scores = sorted(c.score for c in members)  # summed in one order: arrival-independent
    return Ranked(
        canon=text,
        value=value,
        support=sum(scores),
        claims=tuple(sorted(c.fact.id for c in members)),
        best=scores[-1],
        newest=max(c.fact.observed_at.timestamp() for c in members),
    )


def _order(r: Ranked) -> tuple[float, float, float, str]:
    return (-round(r.support, 9), -round(r.best, 9), -r.newest, r.canon)


def rank_values(claims: Sequence[Claim], multi: bool) -> list[Ranked]:
    """Values by support, best first; ties go to the strongest single claim, then the newest
    claim, then the value's canonical text (never to arrival order).

    For a multi-valued key each item is ranked on its own, and the claims saying "none" (an
    empty list) form one more entry whose value is the empty list.
    """
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


def rank_sides(
    claims: Sequence[Claim], multi: bool, values: list[Ranked] | None = None
) -> list[Ranked]:
    """The competing answers, best first: each value of a single-valued key; for a
    multi-valued key "some" (the union of the asserted items, each claim counted once)
    against "none" (the claims of an empty list), which is where a multi-valued key can
    conflict at all. ``values``: ``rank_values(claims, multi)`` when the caller has it
    (for a single-valued key, the sides are the values, ranked once)."""
    if not multi:
        return rank_values(claims, multi) if values is None else values
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
