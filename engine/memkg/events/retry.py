"""Unconditional writes retry the optimistic-concurrency conflict of a concurrent writer.

A write reads the user's state (live claims, arbitration, freezes), computes its events and
appends them expecting the version it read. When another writer (a thread, another engine
process) appended first, the append raises ``ConcurrencyConflict`` and stores nothing. A caller
that gave no ``expected_version`` asked for nothing conditional, so the write is computed
again on the fresh state and appended again, after a jittered, growing pause, up to a bounded
number of times. A caller that gave ``expected_version`` gets the conflict at once (HTTP 409).

Only the outermost retried call retries: a retried write that calls another (``ingest`` from
``derive_patterns``) lets the conflict rise to the outer one, so attempts never multiply.
"""

from __future__ import annotations

import functools
import inspect
import random
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar

from memkg.errors import ConcurrencyConflict

P = ParamSpec("P")
R = TypeVar("R")

FIRST_PAUSE = 0.002
"""Seconds before the first retry (the upper bound of its jitter); doubled on each retry."""
LONGEST_PAUSE = 0.1

_inside = threading.local()


class _Counted(Protocol):
    retried: int
    surfaced: int


class Attempts:
    """How many conflicts writes met and retried, and how many reached the caller."""

    def __init__(self) -> None:
        self.retried = 0
        self.surfaced = 0


def pause(attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): full jitter below a bound
    that doubles each time, so writers that collided do not collide again in step.

    >>> 0 <= pause(1) <= FIRST_PAUSE
    True
    >>> 0 <= pause(30) <= LONGEST_PAUSE
    True
    """
    bound = min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** (attempt - 1))
    return (rng or random).uniform(0, bound)


def retry_conflicts(
    write: Callable[[], R], *, retries: int, counts: _Counted | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> R:  # fmt: skip
    """Call ``write`` until it appends without a conflict, at most ``retries`` times more."""
    if getattr(_inside, "depth", 0):
        return write()
    _inside.depth = 1
    try:
        attempt = 0
        while True:
            try:
                return write()
            except ConcurrencyConflict:
                attempt += 1
                if attempt > retries:
                    if counts is not None:
                        counts.surfaced += 1
                    raise
                if counts is not None:
                    counts.retried += 1
                sleep(pause(attempt))
    finally:
        _inside.depth = 0


def unconditional(method: Callable[P, R]) -> Callable[P, R]:
    """Retry ``method`` (of an engine) on a conflict unless its ``expected_version`` is set.

    The engine supplies ``config.write_retries`` and a ``conflicts`` counter (``Attempts``).
    """
    position, default = _expected_version(method)

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if "expected_version" in kwargs:
            expected = kwargs["expected_version"]
        elif position is not None and len(args) > position:
            expected = args[position]
        else:
            expected = default
        if expected is not None:
            return method(*args, **kwargs)
        engine: Any = args[0]
        return retry_conflicts(
            lambda: method(*args, **kwargs),
            retries=engine.config.write_retries,
            counts=engine.conflicts,
        )

    return wrapper


def _expected_version(method: Callable[..., Any]) -> tuple[int | None, Any]:
    """Where a call of ``method`` passes ``expected_version`` by position (None: only by
    name, or not at all), and its default: read once, not bound on every call."""
    parameters = list(inspect.signature(method).parameters.values())
    for position, parameter in enumerate(parameters):
        if parameter.name != "expected_version":
            continue
        default = None if parameter.default is inspect.Parameter.empty else parameter.default
        by_position = parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        )
        return (position if by_position else None), default
    return None, None
