"""Whether a stored JSON record cites an id: as a whole word of one of its strings, so that
``fact_1`` is not found in ``fact_10`` nor ``mei`` in ``meiosis``. The decision log and the
trace stores use it to erase exactly the records that cite purged facts; SQL narrows the
rows by substring first (``citation_needles``), this confirms each candidate."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Any


def citation_needles(ids: Collection[str]) -> list[str]:
    """The ids as they appear inside a JSON record (what SQL narrows rows by); empty ids
    would match everything."""
    return sorted({json.dumps(f, ensure_ascii=False)[1:-1] for f in ids if f})


def mentions(value: Any, ids: Collection[str]) -> bool:
    """Whether one of ``ids`` stands as a whole word in a string of ``value`` (parsed JSON)."""
    wanted = sorted({i for i in ids if i}, key=len, reverse=True)
    if not wanted:
        return False
    whole = re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, wanted))})(?![\w-])")
    return any(whole.search(text) for text in json_strings(value))


def json_strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included (a stack, not recursion: records nest)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            yield from item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
