"""Reviews opened, and what the review queue reads from the store, counted: the events the
store hands over and the users whose streams are read, asserted as counts, never timed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from memkg import Engine
from support.observations import obs

CONTESTED = (("airline:SQ", "dialogue", 0.9), ("airline:CZ", "behavior", 0.95),
             ("airline:CA", "profile", 0.95))  # fmt: skip


class StoreReads:
    """Counts, per method, the events the store hands over, and the users whose streams are
    read (by wrapping the store's methods on the instance the engine holds)."""

    def __init__(self, store: Any) -> None:
        self.events: Counter[str] = Counter()
        self.users: set[str] = set()
        for name in ("read_reviews", "read_all"):
            setattr(store, name, self._events(name, getattr(store, name)))
        for name in ("read_stream", "read_rows"):
            if callable(getattr(store, name, None)):
                setattr(store, name, self._user(getattr(store, name)))

    def _events(self, name: str, read: Callable[..., Iterator[Any]]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
            for event in read(*args, **kwargs):
                self.events[name] += 1
                yield event

        return counted

    def _user(self, read: Callable[..., Any]) -> Callable[..., Any]:
        def seen(user_id: str, *args: Any, **kwargs: Any) -> Any:
            self.users.add(user_id)
            return read(user_id, *args, **kwargs)

        return seen

    def take(self) -> tuple[dict[str, int], set[str]]:
        """What was read since the last ``take``."""
        found = (dict(self.events), set(self.users))
        self.events.clear()
        self.users.clear()
        return found


def freeze(engine: Engine, user: str) -> None:
    """Three strong claims of one key, of three sources: the key freezes, a review opens."""
    for value, source, confidence in CONTESTED:
        engine.ingest(obs(user_id=user, value=value, source=source, confidence=confidence))
