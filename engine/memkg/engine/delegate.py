"""How ``Engine`` delegates: ``via`` (a public method that is a stage service's method) and
``shared`` (a public attribute that is a part of its ``Setup``).

The engine's method is the service's bound method itself: the same signature (for mypy
too), the same docstring, no wrapper in between.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from memkg.once import once

P = ParamSpec("P")
R = TypeVar("R")


class via(Generic[P, R]):
    """``name = via("service", Service.name)``: ``engine.name`` is ``engine.service.name``."""

    def __init__(self, service: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.service = service
        self.name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method

    @overload
    def __get__(self, owner: None, kind: type | None = None) -> via[P, R]: ...

    @overload
    def __get__(self, owner: object, kind: type | None = None) -> Callable[P, R]: ...

    def __get__(self, owner: object | None, kind: type | None = None) -> Any:
        if owner is None:
            return self
        method: Callable[P, R] = getattr(getattr(owner, self.service), self.name)
        return method


T = TypeVar("T")


class shared(Generic[T]):
    """``name = shared(Setup.name)``: ``engine.name`` is ``engine.setup.name``, read-only."""

    def __init__(self, part: once[T]) -> None:
        self.name = part.name
        self.__doc__ = part.__doc__

    @overload
    def __get__(self, owner: None, kind: type | None = None) -> shared[T]: ...

    @overload
    def __get__(self, owner: object, kind: type | None = None) -> T: ...

    def __get__(self, owner: object | None, kind: type | None = None) -> Any:
        if owner is None:
            return self
        return getattr(owner.setup, self.name)  # type: ignore[attr-defined]

    def __set__(self, owner: object, value: T) -> None:
        raise AttributeError(f"{self.name} is the engine's Setup's: set it there")
