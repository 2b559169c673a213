"""What one evaluation built that a later one may use again: explanation nodes, by what they show.

A warm user's decisions bind most rules to the same facts as the decision before, and the
candidate and explanation nodes a rule builds from them are the costliest part of an
evaluation. ``Reuse`` keeps them, keyed on everything they are built from: the rule, the
facts it is bound to, the context values and message it shows. The rule and the facts enter
the key by identity: both are immutable, and a new state of memory that changes a claim
holds a new ``Fact`` for it, so the same objects mean the same content. Each entry holds its
objects only weakly and leaves the cache when one of them is freed (a user's memory dropped
from the projections, as after an erasure, takes its entries with it); a hit checks that
every object it was built on is the very one the evaluation holds, so an entry can never
stand for another object that took a freed one's place. At most ``size`` entries, the
oldest out first. What else an evaluation keeps here (a fact's messages, which rules nearly
fired and how far each got) follows the same rules: ``rules/snapshot.py``, ``rules/near_miss.py``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Sequence
from typing import Any

SIZE = 4_096
"""Entries an evaluator keeps by default."""


class Reuse:
    """A bounded map from what a node was built from to the node."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._entries: dict[Hashable, tuple[tuple[weakref.ref[object], ...], Any]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, held: Sequence[object]) -> Any | None:
        """What was kept for ``key`` built on exactly ``held`` (these objects), or None."""
        found = self._entries.get(key)
        if found is None:
            return None
        refs, value = found
        if len(refs) != len(held) or any(r() is not h for r, h in zip(refs, held, strict=True)):
            return None
        return value

    def put(self, key: Hashable, held: Sequence[object], value: Any) -> None:
        """Keep ``value`` for ``key``, for as long as every one of ``held`` lives."""
        entries = self._entries

        def gone(_ref: weakref.ref[object], key: Hashable = key) -> None:
            found = entries.get(key)
            if found is not None and _ref in found[0]:
                entries.pop(key, None)

        refs = tuple(weakref.ref(h, gone) for h in held)
        with self._lock:
            if self.size <= 0:
                return  # nothing is kept
            while len(entries) >= self.size and key not in entries:
                try:
                    entries.pop(next(iter(entries)), None)
                except (RuntimeError, StopIteration):  # a fact freed meanwhile took one out
                    continue
            entries[key] = (refs, value)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
