"""The human-review queue: keys frozen by a strong conflict, and how reviewers settled them.

Both are events in the user's stream (``key.frozen``, ``review.resolved``); ``reviews_from``
folds them into ``Review`` values, so the queue is rebuilt from the log like everything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memkg.arbitration.resolution import Resolution, Standing
from memkg.model.event import Event, EventType


class ReviewStatus(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


class Review(BaseModel):
    """One frozen key slot and, once settled, the reviewer's decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    review_id: str
    user_id: str
    domain: str
    key: str
    context: dict[str, str] = Field(default_factory=dict)
    status: ReviewStatus
    opened_at: datetime
    strength: float
    reason: str
    claims: tuple[dict[str, Any], ...] = ()
    """The contested claims when frozen: fact id, source, score (values stay in their facts,
    so erasing a fact by its audit id leaves none behind here)."""
    value: Any = None
    note: str | None = None
    reviewer: str | None = None
    resolved_at: datetime | None = None

    def matches(self, domain: str, key: str, context: dict[str, str]) -> bool:
        return (self.domain, self.key, self.context) == (domain, key, context)


def frozen_payload(review_id: str, resolution: Resolution) -> dict[str, Any]:
    """The ``key.frozen`` payload for a frozen resolution."""
    return {
        "review_id": review_id,
        "key": resolution.key,
        "context": resolution.context,
        "strength": resolution.strength,
        "reason": resolution.reason,
        "claims": [
            {"fact_id": c.fact_id, "source": c.source.value, "score": c.score}
            for c in resolution.claims
            if c.standing is Standing.CONTESTED
        ],
    }


def reviews_from(events: Iterable[Event]) -> dict[str, Review]:
    """Every review in the events, by id, in its latest state."""
    reviews: dict[str, Review] = {}
    for event in events:
        fold_review(reviews, event)
    return reviews


def fold_review(reviews: dict[str, Review], event: Event) -> None:
    """Apply one event to ``reviews`` (events other than freezes and resolutions pass by)."""
    payload = event.payload
    if event.type is EventType.KEY_FROZEN:
        reviews[payload["review_id"]] = Review(
            review_id=payload["review_id"],
            user_id=event.user_id,
            domain=event.domain or "",
            key=payload["key"],
            context=payload.get("context") or {},
            status=ReviewStatus.OPEN,
            opened_at=event.recorded_at,
            strength=payload.get("strength", 0.0),
            reason=payload.get("reason", ""),
            claims=tuple(payload.get("claims", ())),
        )
    elif event.type is EventType.REVIEW_RESOLVED and payload["review_id"] in reviews:
        reviews[payload["review_id"]] = reviews[payload["review_id"]].model_copy(
            update={
                "status": ReviewStatus.RESOLVED,
                "value": payload.get("value"),
                "note": payload.get("note"),
                "reviewer": payload.get("reviewer"),
                "resolved_at": event.recorded_at,
            }
        )


def latest_review(
    reviews: Iterable[Review], domain: str, key: str, context: dict[str, str]
) -> Review | None:
    """The review that governs a key slot now: an open one, else the last resolved."""
    found = [r for r in reviews if r.matches(domain, key, context)]
    open_ = [r for r in found if r.status is ReviewStatus.OPEN]
    if open_:
        return min(open_, key=lambda r: r.opened_at)
    return max(found, key=lambda r: r.resolved_at or r.opened_at, default=None)
