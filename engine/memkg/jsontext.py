"""JSON text from outside (a request body, a JSONL line, a model's tool arguments) read one
way only, or refused saying why.

>>> read_json('{"note": "a", "note": "b"}')
Traceback (most recent call last):
memkg.jsontext.RepeatedKey: the key 'note' appears twice in one object
>>> read_json("1" * 5000)  # doctest: +ELLIPSIS
Traceback (most recent call last):
memkg.jsontext.LongInteger: an integer of 5,000 digits is past the range ...
"""

from __future__ import annotations

import json
import sys
from typing import Any

INT_BOUND = 2**63
"""Integers memkg keeps lie in ``[-INT_BOUND, INT_BOUND)``: 64 bits, what SQLite, PostgreSQL's
``bigint`` and durable-rules hold as numbers (``value.int_range`` past them)."""


def fits(value: int) -> bool:
    """Whether the integer ``value`` lies in the range memkg keeps integers in."""
    return -INT_BOUND <= value < INT_BOUND


def out_of_range(digits: int) -> str:
    """What ``value.int_range`` says of an integer of ``digits`` digits."""
    return (
        f"an integer of {digits:,} digits is past the range stores and rules compare in "
        "(-2**63 to 2**63 - 1): send a number that fits, or a string"
    )


class LongInteger(ValueError):
    """An integer literal longer than Python reads, and so past the 64-bit range anyway
    (``value.int_range``, not an error that sends the client to
    ``sys.set_int_max_str_digits``)."""

    def __init__(self, digits: int) -> None:
        super().__init__(out_of_range(digits))


class RepeatedKey(ValueError):
    """A key given twice in one object: readers disagree on which copy counts, so what is
    checked may not be what is used."""


def read_json(text: str) -> Any:
    """``text`` parsed as JSON, or a ``ValueError`` saying why it cannot be read one way only:
    not JSON, nested too deeply, an integer too long (``LongInteger``), or a key given twice
    in one object (``RepeatedKey``)."""
    try:
        return json.loads(text, object_pairs_hook=_once, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at {exc.pos})") from exc
    except RecursionError as exc:
        raise ValueError("nested too deeply to read") from exc


def _integer(literal: str) -> int:
    most = sys.get_int_max_str_digits()  # 4,300 unless the process set another (0: none)
    if most and len(literal.lstrip("-")) > most:
        raise LongInteger(len(literal.lstrip("-")))
    return int(literal)


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise RepeatedKey(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found
