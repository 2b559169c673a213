"""Conditions and outcomes in words, for explanations a non-engineer can read.

>>> from memkg.rules.spec import Condition, Test
>>> condition_text(Condition(0, "fact", 1, {}, key="child.age", tests=(Test("lt", 6),)))
'child.age < 6'
>>> window = Test("outside", ("06:00", "22:00"), "local_time")
>>> condition_text(Condition(0, "context", 1, {}, tests=(window,)))
'local time outside 06:00–22:00'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memkg.model.template import NONE_WORDS, placeholders, stray_braces
from memkg.model.template import fill as fill_template
from memkg.rules.spec import SYMBOLS, Condition, Test

__all__ = ["condition_text", "describe_test", "fill", "placeholders", "stray_braces", "value_text"]


def value_text(value: Any) -> str:
    """A value in words. An object's fields are in key order: JSON objects have none of their
    own, and a store may give them back in another (PostgreSQL's JSONB does), so a message
    quoting one reads the same in every process and replays.

    >>> value_text({"systolic": 190, "diastolic": 110})
    'diastolic: 110, systolic: 190'

    An empty list is an explicit "none" ("I have no allergies"):

    >>> value_text([])
    'none'
    """
    if isinstance(value, list | tuple):
        return ", ".join(_nested(v) for v in value) if value else NONE_WORDS["en"]
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_nested(v)}" for k, v in sorted(value.items(), key=_by_key))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _by_key(item: tuple[Any, Any]) -> str:
    return str(item[0])


def _nested(value: Any) -> str:
    return f"({value_text(value)})" if isinstance(value, dict) else value_text(value)


def describe_test(test: Test, subject: str) -> str:
    value = test.operand
    if test.op in ("between", "outside"):
        return f"{subject} {test.op} {value_text(value[0])}–{value_text(value[1])}"
    if test.op == "exists":
        return f"{subject} is {'given' if value else 'not given'}"
    if test.op in ("in", "not_in"):
        return f"{subject} {SYMBOLS[test.op]} [{value_text(value)}]"
    return f"{subject} {SYMBOLS[test.op]} {value_text(value)}"


def condition_text(cond: Condition) -> str:
    """The condition in words, as its kind describes it."""
    body = cond.handler.describe(cond)
    return f"not ({body})" if cond.negated else body


def fill(template: str, lookup: Callable[[str], Any]) -> str:
    """Replace ``{name}`` by ``lookup(name)`` in words; a name with no value reads "(no name
    given)" (``memkg.model.template``).

    >>> fill("No interest in {category} on record", lambda name: None)
    'No interest in (no category given) on record'
    """

    def shown(name: str) -> str | None:
        found = lookup(name)
        return None if found is None else value_text(found)

    return fill_template(template, shown)
