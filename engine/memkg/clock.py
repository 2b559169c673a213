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

import base64
import os
import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

_CROCKFORD = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz"
)
"""RFC 4648 base 32 digits to Crockford's, lower case."""
_COUNTER_LIMIT = 32**4
"""Ids minted in one millisecond before the next one is borrowed (4 base-32 digits)."""


def _id_digits(ms: int, counter: int, rand: int) -> str:
    """22 Crockford base-32 digits: 10 of milliseconds, 4 of counter, 8 of randomness."""
    bits = (ms % 2**50) << 60 | counter << 40 | rand  # 110 bits, 10 zero bits above them
    return base64.b32encode(bits.to_bytes(15, "big"))[2:].translate(_CROCKFORD).decode()


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
        self._entropy = entropy

    def mint(self, prefix: str, at: datetime) -> str:
        ms = int(at.timestamp() * 1000)
        with self._lock:
            if ms <= self._last_ms:
                ms = self._last_ms
                self._counter += 1
                if self._counter >= self._limit:  # ids stay unique and ordered: borrow 1 ms
                    ms = self._last_ms = self._last_ms + 1
                    self._counter = 0
            else:
                self._last_ms, self._counter = ms, 0
            counter = self._counter
        tail = self._entropy if self._entropy is not None else os.urandom(5)
        return f"{prefix}_{_id_digits(ms, counter, int.from_bytes(tail[:5], 'big'))}"


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
