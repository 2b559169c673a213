"""Token counting for prompt budgets: exact with ``tiktoken`` when installed, else an estimate.

The estimate works offline and errs high on ordinary text, so what it fits into a budget
also fits the tokenizers of common chat models: a run of ASCII letters counts 1 token plus 1
per 5 further letters, digits 1 per 3, every other character (punctuation, CJK, emoji) 1
each; whitespace is free (tokenizers fold it into the next word).

>>> approximate_tokens("Prefers aisle seats.")
5
>>> approximate_tokens("喜欢靠窗")
4
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable

TokenCounter = Callable[[str], int]

_RUNS = re.compile(r"[A-Za-z]+|[0-9]+|\s+|.", re.S)


def approximate_tokens(text: str) -> int:
    total = 0
    for run in _RUNS.findall(text):
        if run[0].isspace():
            continue
        if run[0].isascii() and run[0].isalpha():
            total += 1 + (len(run) - 1) // 5
        elif run[0].isascii() and run[0].isdigit():
            total += max(1, math.ceil(len(run) / 3))
        else:
            total += 1
    return total


def default_counter() -> tuple[TokenCounter, str]:
    """The best counter available here, and its name (``tiktoken:<encoding>`` or estimate)."""
    try:
        encoding = importlib.import_module("tiktoken").get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be fetched offline
        return approximate_tokens, "estimate"

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count, f"tiktoken:{encoding.name}"
