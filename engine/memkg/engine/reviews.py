"""The review queue, wired: frozen keys waiting for a reviewer, and their resolution.

What each costs follows what it is about, not how many reviews the log ever held: the queue
is kept (``OpenReviews``: the open reviews, caught up with the review events appended since
it last looked), and a review is looked up by its id, its own events read by the store's
index. Only the listing of every review, resolved ones included, reads them all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from memkg.arbitration import Review, ReviewStatus
from memkg.arbitration.review import fold_review, reviews_from
from memkg.config import EngineConfig
from memkg.engine.journal import Journal
from memkg.engine.setup import Setup, check_args
from memkg.errors import InvalidOperation, NotFound, ValidationFailed
from memkg.events.retry import Attempts, unconditional
from memkg.events.store import EventStore
from memkg.model.event import EventType
from memkg.model.names import NAME_RULE, is_name
from memkg.model.report import ValidationReport


def queue_order(review: Review) -> tuple[Any, ...]:
    """Where a review stands in the queue: oldest first, then by id."""
    return (review.opened_at, review.review_id)


class OpenReviews:
    """The log's open reviews, kept current: each read folds only the review events appended
    since the one before (any process's: they are read from the store, so another replica's
    freezes and resolutions show up on the next read). A purge or an erasure may have taken
    reviews away: when the store's purge count moved, the log's reviews are folded anew, once.
    Read outside a write batch, as every caller does (a batch's thread would fold its events
    before they commit).
    """

    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._purges: int | None = None
        """The store's purge count the reviews held were folded at (None: none folded yet)."""
        self._seq = 0
        """The log position folded up to."""
        self._open: dict[str, Review] = {}
        self._listed: list[Review] | None = None
        """``_open`` in queue order, until a review opens or closes."""

    def forget(self) -> None:
        """Drop the reviews held (an erasure: their claims hold what users said); the next
        read folds the log's anew."""
        with self._lock:
            self._purges, self._seq, self._open, self._listed = None, 0, {}, None

    def listed(self) -> list[Review]:
        """The open reviews now, oldest first (callers must not change the list)."""
        with self._lock:
            # the count before the events: a purge in between is seen by the next read
            purges = self._store.purges()
            if purges != self._purges:
                self._purges, self._seq, self._open, self._listed = purges, 0, {}, None
            for event in self._store.read_reviews(after_seq=self._seq):
                self._seq, self._listed = event.seq, None
                fold_review(self._open, event)
                folded = self._open.get(event.payload["review_id"])
                if folded is not None and folded.status is not ReviewStatus.OPEN:
                    del self._open[folded.review_id]
            if self._listed is None:
                self._listed = sorted(self._open.values(), key=queue_order)
            return self._listed


@dataclass(eq=False, repr=False)
class ReviewDesk:
    """The human-review queue; see ``memkg.Engine``."""

    setup: Setup
    journal: Journal
    conflicts: Attempts
    queue: OpenReviews = field(init=False)

    def __post_init__(self) -> None:
        self.queue = OpenReviews(self.journal.store)

    @property
    def config(self) -> EngineConfig:
        return self.setup.config

    def review_queue(self, *, include_resolved: bool = False) -> list[Review]:
        """Frozen keys waiting for a reviewer, oldest first: the reviews open now (read from
        the reviews appended since the last call), or with ``include_resolved`` every review
        the log holds (read from all of them)."""
        if not include_resolved:
            return list(self.queue.listed())
        reviews = reviews_from(self.journal.store.read_reviews()).values()
        return sorted(reviews, key=queue_order)

    def review(self, review_id: str) -> Review:
        """One review, open or resolved, in its latest state: its own events read, by the
        store's index of them; ``review.not_found`` when the log holds none."""
        check_args(review_id=review_id)
        events = self.journal.store.read_reviews(review_id=review_id)
        found = reviews_from(events).get(review_id)
        if found is None:
            raise NotFound(f"no review {review_id}", code="review.not_found")
        return found

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
        self.setup.key_spec(review.domain, review.key)  # a key no root declares any more
        # the value goes where a write's would (resolve, the profile, decisions): it meets
        # every check a write of it would
        checked = self.setup.validator.check_settled(
            review.user_id, review.domain, review.key, value, review.context,
            self.journal.clock.now(), self.journal.store.subject_salt,
        )  # fmt: skip
        if isinstance(checked, ValidationReport):
            raise ValidationFailed(checked, "review resolution")
        value = checked.value  # hashed where the key hashes
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
        review = self.review(review_id)
        if review.status is not ReviewStatus.OPEN:
            raise InvalidOperation(f"review {review_id} is already resolved", code="review.closed")
        return review
