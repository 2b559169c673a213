"""A progress line on standard error for long work, only on a terminal and without --quiet."""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    """Call with the count done so far; draws ``label: done[/total]`` at most 10 times a second.

    Off when ``stream`` is not a terminal or ``quiet`` is set, so pipes and logs stay clean.
    """

    def __init__(self, label: str, stream: TextIO, *, quiet: bool, total: int | None = None):
        self.label, self.stream, self.total = label, stream, total
        self.enabled = not quiet and stream.isatty()
        self._drawn = 0.0
        self._done = 0

    def __call__(self, done: int) -> None:
        self._done = done
        now = time.monotonic()  # drawing pace only; nothing recorded depends on it
        if self.enabled and now - self._drawn >= 0.1:
            self._drawn = now
            of = f"/{self.total}" if self.total else ""
            self.stream.write(f"\r{self.label}: {done}{of}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled and self._drawn:
            self.stream.write(f"\r{self.label}: {self._done} done\n")
            self.stream.flush()
