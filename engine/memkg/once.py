"""``once``: a part an object builds on first use, built once however many threads ask at once.

``functools.cached_property`` stopped locking in Python 3.12: two threads asking first both
build, and one of them keeps a part nobody else sees. For a parse of the ontology that is
only time lost; for a part that holds a connection (a trace store, a vector store, an
embeddings client) it is a connection never closed, and for one that keeps state (the
validator's memo an erasure clears) it is state kept where nothing clears it. The engine's
parts are shared by every thread of a server, so those are built with ``once``. A build may
read other ``once`` parts, of the same object or of parts below it (a validator reads the
ontology), never of the object that asks for it: the locks are taken in that order only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")

_LOCKS = threading.Lock()
"""Held only to give an object its build lock."""


class once(Generic[T]):
    """``@once`` on a method: the attribute of that name is its result, built on first use,
    under a lock of the instance's (reentrant: a build may read the instance's other parts),
    and kept in the instance's ``__dict__`` as ``cached_property`` keeps it."""

    def __init__(self, build: Callable[[Any], T]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> once[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> Any:
        if instance is None:
            return self
        held = instance.__dict__
        if self.name in held:
            return held[self.name]
        with _lock_of(held):
            if self.name not in held:  # another thread may have built it while this one waited
                held[self.name] = self.build(instance)
            return held[self.name]


def _lock_of(held: dict[str, Any]) -> threading.RLock:
    lock = held.get("_once_lock")
    if lock is None:
        with _LOCKS:
            lock = held.setdefault("_once_lock", threading.RLock())
    return lock  # type: ignore[no-any-return]
