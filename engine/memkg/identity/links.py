"""Merge links folded from one stream: proposals, merges and splits, by merge id.

A merge is written in both streams (the primary's and the other's); a link holds only while
both say so (``stream.visible`` checks the other side), so a merge cut off half-way joins
nothing and a retry completes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memkg.model.event import Event, EventType
from memkg.model.identity import Merge, MergeStatus

IDENTITY_EVENTS = frozenset(
    {EventType.MERGE_PROPOSED, EventType.USERS_MERGED, EventType.USERS_SPLIT}
)
_STATUS = {
    EventType.MERGE_PROPOSED: MergeStatus.PROPOSED,
    EventType.USERS_MERGED: MergeStatus.MERGED,
    EventType.USERS_SPLIT: MergeStatus.SPLIT,
}


@dataclass
class Links:
    """What one stream says about its id's merges, by merge id (latest status each)."""

    user_id: str
    merges: dict[str, Merge] = field(default_factory=dict)

    @property
    def merged_into(self) -> Merge | None:
        """The merge that made this id an ``other`` of a primary, if it holds."""
        held = (m for m in self.merges.values() if m.status is MergeStatus.MERGED)
        return next((m for m in held if m.other == self.user_id), None)

    @property
    def others(self) -> list[Merge]:
        """Merges in force where this id is the primary, by merge id."""
        return sorted((m for m in self.merges.values()
                       if m.status is MergeStatus.MERGED and m.primary == self.user_id),
                      key=lambda m: m.merge_id)  # fmt: skip

    def counterparts(self) -> set[str]:
        """Every id this one was ever linked to, proposed or merged (erasure scrubs them)."""
        return {m.other if m.primary == self.user_id else m.primary for m in self.merges.values()}

    def holds(self, merge: Merge) -> bool:
        """Whether this side also records ``merge`` as in force."""
        mine = self.merges.get(merge.merge_id)
        return mine is not None and mine.status is MergeStatus.MERGED


def merge_from(event: Event) -> Merge:
    p = event.payload
    return Merge(merge_id=p["merge_id"], primary=p["primary"], other=p["other"],
                 status=_STATUS[event.type], by=p["by"], reason=p["reason"],
                 at=event.recorded_at)  # fmt: skip


def fold_links(user_id: str, events: Iterable[Event]) -> Links:
    links = Links(user_id)
    for event in events:
        if event.type in IDENTITY_EVENTS:
            merge = merge_from(event)
            links.merges[merge.merge_id] = merge
    return links


def merges_from(user_id: str, events: Iterable[Event]) -> list[Merge]:
    """Every merge the stream records, oldest first, each with its latest status."""
    return sorted(fold_links(user_id, events).merges.values(), key=lambda m: (m.at, m.merge_id))
