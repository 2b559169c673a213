"""The review queue, wired: frozen keys waiting for a reviewer, and their resolution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memkg.arbitration import Review, ReviewStatus
from memkg.arbitration.review import reviews_from
from memkg.config import EngineConfig
from memkg.engine.journal import Journal
from memkg.engine.setup import Setup, check_args
from memkg.errors import InvalidOperation, NotFound, ValidationFailed
from memkg.events.retry import Attempts, unconditional
from memkg.model.event import EventType
from memkg.model.names import NAME_RULE, is_name
from memkg.model.report import Problem, ValidationReport
from memkg.validate.guards import hash_pii


@dataclass(eq=False, repr=False)
class ReviewDesk:
    """The human-review queue; see ``memkg.Engine``."""

    setup: Setup
    journal: Journal
    conflicts: Attempts

    @property
    def config(self) -> EngineConfig:
        return self.setup.config

    def review_queue(self, *, include_resolved: bool = False) -> list[Review]:
        """Frozen keys waiting for a reviewer, oldest first (reads the log's reviews only)."""
        reviews = reviews_from(self.journal.store.read_reviews()).values()
        found = [r for r in reviews if include_resolved or r.status is ReviewStatus.OPEN]
        return sorted(found, key=lambda r: (r.opened_at, r.review_id))

    @unconditional
    def resolve_review(
        self, review_id: str, value: Any, note: str, reviewer: str = "reviewer"
    ) -> Review:
        """Settle a frozen key with ``value``: an event naming the reviewer; the key unfreezes."""
        check_args(review_id=review_id, value=value, note=note, reviewer=reviewer)
        review = self._open_review(review_id)
        if not note.strip() or len(note) > 500:
            raise InvalidOperation("give a note of 1-500 characters: why this value",
                                   code="review.note")  # fmt: skip
        if not is_name(reviewer):
            raise InvalidOperation(
                f"give the reviewer's name, {NAME_RULE}, not {reviewer!r:.40} of "
                f"{len(reviewer):,} (over HTTP it is the key's name unless the request gives "
                "`reviewer`)", code="review.reviewer",
            )  # fmt: skip
        spec = self.setup.key_spec(review.domain, review.key)
        problems = tuple(
            Problem(code=f"schema.{e.validator}", path="$.value", message=e.message, stage="schema")
            for e in spec.validator.iter_errors(value)
        )
        if problems:
            raise ValidationFailed(ValidationReport(problems=problems), "review resolution")
        if spec.hashed_paths:
            value = hash_pii(
                value, spec.hashed_paths, self.journal.store.subject_salt(review.user_id)
            )
        payload = {"review_id": review_id, "key": review.key, "context": review.context,
                   "value": value, "note": note, "reviewer": reviewer}  # fmt: skip
        with self.journal.lock:
            review = self._open_review(review_id)  # again, under the lock: resolved only once
            self.journal.plain(
                review.user_id, review.domain, EventType.REVIEW_RESOLVED, payload,
                subject_id=review_id,
            )  # fmt: skip
        return review.model_copy(update={"status": ReviewStatus.RESOLVED, "value": value,
                                         "note": note, "reviewer": reviewer,
                                         "resolved_at": self.journal.clock.now()})  # fmt: skip

    def _open_review(self, review_id: str) -> Review:
        review = next((r for r in self.review_queue(include_resolved=True)
                       if r.review_id == review_id), None)  # fmt: skip
        if review is None:
            raise NotFound(f"no review {review_id}", code="review.not_found")
        if review.status is not ReviewStatus.OPEN:
            raise InvalidOperation(f"review {review_id} is already resolved", code="review.closed")
        return review
