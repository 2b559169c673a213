"""Sample strings that match a regular expression (a useful subset of the syntax).

A short pattern can stand for a long string (`((a{60}){60}){60}`, or groups that repeat the
one before them through back-references), so every character is counted as it is emitted and
a sample longer than the caller's limit is abandoned before it is built.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from memkg import userschema

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

_PROBES = "aZ0_- .xb9@"
_CATEGORY = {
    "CATEGORY_DIGIT": "0123456789",
    "CATEGORY_NOT_DIGIT": "ax_-",
    "CATEGORY_WORD": "ab0_Z",
    "CATEGORY_NOT_WORD": " -.@",
    "CATEGORY_SPACE": " \t",
    "CATEGORY_NOT_SPACE": "ab0-",
}


class _Room:
    """Characters a sample may still take: each is counted before it joins the sample."""

    __slots__ = ("left",)

    def __init__(self, longest: int) -> None:
        self.left = longest

    def take(self, text: str) -> str:
        self.left -= len(text)
        if self.left < 0:
            raise ValueError("sample longer than the longest candidate string")
        return text


def samples(pattern: str, count: int, longest: int) -> list[str]:
    """Up to `count` distinct strings of at most `longest` characters matching `pattern`, or
    [] if it cannot be sampled."""
    try:
        tree = _parser.parse(pattern)
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return []
    out: list[str] = []
    for variant in range(count * 2):
        try:
            text = _emit(list(tree), variant, {}, _Room(longest))
        except (ValueError, RecursionError):
            continue
        try:
            found = userschema.search(pattern, text)
        except userschema.PatternTimeout:
            continue
        except re.error:
            return []
        if text not in out and found:
            out.append(text)
        if len(out) >= count:
            break
    return out


def _class_chars(items: list[tuple[Any, Any]]) -> list[str]:
    chars: list[str] = []
    negate = False
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.append(chr(arg))
        elif name == "RANGE":
            lo, hi = arg
            chars.extend(chr(c) for c in {lo, hi, (lo + hi) // 2})
        elif name == "CATEGORY":
            chars.extend(_CATEGORY.get(str(arg), "a"))
    if negate:
        return [c for c in _PROBES if c not in chars] or ["~"]
    return sorted(chars) or ["a"]


def _emit(items: list[tuple[Any, Any]], variant: int, groups: dict[int, str], room: _Room) -> str:
    out: list[str] = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(room.take(chr(arg)))
        elif name == "NOT_LITERAL":
            out.append(room.take(next(c for c in _PROBES if ord(c) != arg)))
        elif name == "ANY":
            out.append(room.take("ab"[variant % 2]))
        elif name == "IN":
            chars = _class_chars(list(arg))
            out.append(room.take(chars[variant % len(chars)]))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = arg
            if low > 64:
                raise ValueError("repetition too long to sample")
            high = low + 3 if high == _c.MAXREPEAT else high
            times = min(high, low + (variant % 3))
            out.extend(_emit(list(sub), variant + i, groups, room) for i in range(times))
        elif name == "SUBPATTERN":
            group, sub = arg[0], arg[-1]
            text = _emit(list(sub), variant, groups, room)
            if group is not None:
                groups[group] = text
            out.append(text)
        elif name == "ATOMIC_GROUP":
            out.append(_emit(list(arg), variant, groups, room))
        elif name == "BRANCH":
            options = arg[1]
            out.append(_emit(list(options[variant % len(options)]), variant // 2, groups, room))
        elif name == "GROUPREF":
            out.append(room.take(groups.get(arg, "")))
        elif name == "CATEGORY":
            pool = _CATEGORY.get(str(arg), "a")
            out.append(room.take(pool[variant % len(pool)]))
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            raise ValueError(f"unsupported regex construct {name}")
    return "".join(out)
