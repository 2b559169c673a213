"""Listings in pages: at most ``limit`` items after a cursor, and the cursor of the next page.

What HTTP (facts, a key's history, the review queue) and MCP (``recall_facts``) list grows
with what the user said; a page bounds each answer, and every item stays reachable.
"""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

import orjson

from memkg.arbitration import Review
from memkg.errors import InvalidOperation
from memkg.lifecycle.notes import Note
from memkg.model.fact import Fact

MAX_CURSOR = 2048
"""The longest cursor ``after`` takes: a page's ``next`` is the last item's place (a fact's
domain, key and id, base64), and a key's name may be long."""


def page(
    items: list[Any], limit: int, after: str | None, order: Callable[[Any], tuple[Any, ...]]
) -> tuple[list[Any], str | None]:
    """At most ``limit`` of ``items`` (sorted by ``order``), those after the cursor ``after``
    (from the start without it), and the cursor of the next page (``None``: the last page).

    A cursor is the last item's place in that order, not the item: the next page starts
    right after it whether or not the item is still listed (a fact superseded since, a review
    settled from the page before), so paging skips and repeats nothing that stayed. It is
    text to send back as is; one that does not read as a place is ``cursor.invalid``."""
    start = 0
    if after is not None:
        place = _place(after)
        try:
            start = bisect_right(items, place, key=lambda item: list(order(item)))
        except TypeError:  # a place of other types than this listing's
            raise _invalid(after) from None
    shown = items[start : start + limit]
    more = start + limit < len(items) and shown
    return shown, _cursor(order(shown[-1])) if more else None


def _cursor(place: tuple[Any, ...]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(place))).decode().rstrip("=")


def _place(cursor: str) -> list[Any]:
    try:
        found = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        found = None
    if not isinstance(found, list) or not all(isinstance(v, str) or type(v) is int for v in found):
        raise _invalid(cursor)
    return found


def _invalid(cursor: str) -> InvalidOperation:
    return InvalidOperation(
        f"after={cursor!r:.140} is not a cursor this listing gave: send the `next` of the "
        "page before as it came, or list from the start without after",
        code="cursor.invalid",
    )


def fact_order(fact: Fact) -> tuple[str, str, str]:
    """Where a fact stands in a listing of current facts (``UserMemory.current``)."""
    return (fact.domain, fact.key, fact.id)


def note_order(note: Note) -> tuple[str, str]:
    """Where a free-text note stands in a listing of the user's notes: by domain, then as
    written (its id follows the clock)."""
    return (note.domain, note.id)


def version_order(fact: Fact) -> tuple[int, str]:
    """Where a fact stands in a key's history (``UserMemory.history``)."""
    return (fact.seq or 0, fact.id)


def review_order(review: Review) -> tuple[str, str]:
    """Where a review stands in the queue (``Engine.review_queue``: oldest first)."""
    return (review.opened_at.isoformat(), review.review_id)
