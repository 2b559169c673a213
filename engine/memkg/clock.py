"""Time and identity, injected so that replay is exact.

Stages never call ``datetime.now()``; they ask the ``Clock`` they were given.

>>> clock = FrozenClock(datetime(2026, 1, 1, tzinfo=UTC))
>>> clock.now().isoformat()
'2026-01-01T00:00:00+00:00'
>>> a, b = clock.new_id("fact"), clock.new_id("fact")
>>> a < b and a.startswith("fact_")
True
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_DIGITS = "0123456789abcdefghjkmnpqrstvwxyz"
"""Crockford's base 32 digits, lower case."""
_PAIRS = tuple(high + low for high in _DIGITS for low in _DIGITS)
"""The two digits of each 10-bit number."""
_COUNTER_LIMIT = 32**4
"""Ids minted in one millisecond before the next one is borrowed (4 base-32 digits)."""


def _pairs(number: int, count: int) -> str:
    """``number`` as ``2 * count`` base-32 digits, most significant first."""
    return "".join(_PAIRS[number >> 10 * i & 1023] for i in range(count - 1, -1, -1))


def _id_digits(ms: int, counter: int, rand: int) -> str:
    """22 Crockford base-32 digits: 10 of milliseconds, 4 of counter, 8 of randomness."""
    return _pairs(ms % 2**50, 5) + _counter_digits(counter) + _pairs(rand, 4)


def _counter_digits(counter: int) -> str:
    return _PAIRS[counter >> 10] + _PAIRS[counter & 1023]


@runtime_checkable
class Clock(Protocol):
    """Where a stage gets the current time and new ids."""

    def now(self) -> datetime: ...

    def new_id(self, prefix: str) -> str: ...


class _IdMint:
    """Time-ordered ids: 48-bit milliseconds, then a counter, then randomness (ULID-like)."""

    def __init__(self, entropy: bytes | None = None, counter_limit: int = _COUNTER_LIMIT) -> None:
        self._limit = counter_limit
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = 0
        self._tail = None if entropy is None else _pairs(int.from_bytes(entropy[:5], "big"), 4)
        # the digits of the last time and millisecond seen: a frozen clock repeats them
        self._at: datetime | None = None
        self._at_ms = 0
        self._head_ms = -1
        self._head = ""

    def mint(self, prefix: str, at: datetime) -> str:
        with self._lock:
            if at is not self._at:
                self._at, self._at_ms = at, int(at.timestamp() * 1000)
            ms = self._at_ms
            if ms <= self._last_ms:
                ms = self._last_ms
                self._counter += 1
                if self._counter >= self._limit:  # ids stay unique and ordered: borrow 1 ms
                    ms = self._last_ms = self._last_ms + 1
                    self._counter = 0
            else:
                self._last_ms, self._counter = ms, 0
            counter = self._counter
            if ms != self._head_ms:
                self._head_ms, self._head = ms, _pairs(ms % 2**50, 5)
            head = self._head
        tail = self._tail
        if tail is None:
            tail = _pairs(int.from_bytes(os.urandom(5), "big"), 4)
        return f"{prefix}_{head}{_counter_digits(counter)}{tail}"


class SystemClock:
    """Wall-clock time in UTC and random, time-ordered ids."""

    def __init__(self) -> None:
        self._mint = _IdMint()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def new_id(self, prefix: str) -> str:
        return self._mint.mint(prefix, self.now())


class FrozenClock:
    """A clock that stands still until told to move; ids are deterministic."""

    def __init__(self, at: datetime, *, seed: int = 0) -> None:
        if at.tzinfo is None:
            raise ValueError("FrozenClock needs an aware datetime, e.g. datetime(..., tzinfo=UTC)")
        self._at = at
        self._mint = _IdMint(entropy=seed.to_bytes(5, "big"))

    def now(self) -> datetime:
        return self._at

    def new_id(self, prefix: str) -> str:
        return self._mint.mint(prefix, self._at)

    def advance(self, delta: timedelta) -> None:
        self._at = self._at + delta

    def set(self, at: datetime) -> None:
        self._at = at


TIMEZONE = "timezone"
"""The memory key (and request field) of the user's time zone, the local clock is read in."""


def time_zone(name: str) -> ZoneInfo | None:
    """The zone ``name`` names in the time zone database; None for anything else (a typo, a
    folder of zones such as "Asia", a path).

    >>> time_zone("Asia/Shanghai").key, time_zone("Asia/Shangai"), time_zone("Asia")
    ('Asia/Shanghai', None, None)
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder, a long name
        return None
