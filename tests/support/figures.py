"""Figures the durability tests report, printed together at the end of the run."""

from __future__ import annotations

from collections import Counter

LINES: list[str] = []
TOTALS: Counter[str] = Counter()


def record(line: str, **counts: int) -> None:
    """Remember one test's summary line and add its counts to the battery's totals."""
    LINES.append(line)
    TOTALS.update(counts)
