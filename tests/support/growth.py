"""Linear time measured as growth: how much longer work takes on an input 16 times larger.

A clock bound would fail on a slow machine and pass a steep algorithm on a fast one, so the
tests compare sizes instead: linear work grows about 16 times, quadratic about 256 times (a
single 100 KB run of letters took an old quadratic e-mail pattern 21 s). What is timed is the
CPU time of the test's own thread, so other processes on a loaded machine mostly stay out of
the ratio (wall time shrank a quadratic pattern's 250 to 110 there: the long run shared the
cores, the short one did not). Each size is timed three times and the fastest run counts, and
a ratio over the bound is measured up to twice more before it fails: a pause of the machine
does not repeat, a steep algorithm does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

GROWTH = 128.0
"""Time(16 n) / Time(n) stays under this: linear is about 16, quadratic about 256 (half of
that is the bound: many findings make some scans grow a little faster than linear)."""
FLOOR = 1e-3
"""Seconds: the small input's time is taken as at least this, so that work too fast to time
(a pattern that rejects at once) does not make a ratio out of clock noise."""

Input = TypeVar("Input")


def seconds(work: Callable[[], object]) -> float:
    """The fastest of three runs of ``work``, in CPU seconds of this thread."""
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        work()
        best = min(best, time.thread_time() - start)
    return best


def ratio(work: Callable[[Input], object], small: Input, large: Input) -> float:
    """How much longer ``work`` takes on ``large`` than on ``small``, measured once."""
    return seconds(lambda: work(large)) / max(seconds(lambda: work(small)), FLOOR)


def growth(work: Callable[[Input], object], small: Input, large: Input) -> float:
    """``ratio``, measured again (up to twice) while it is over ``GROWTH``; the lowest counts."""
    best = ratio(work, small, large)
    for _ in range(2):
        if best <= GROWTH:
            break
        best = min(best, ratio(work, small, large))
    return best
