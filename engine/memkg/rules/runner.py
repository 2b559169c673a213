"""The ``RuleRunner`` port: matches messages against a compiled rule table.

Two adapters: ``durable_runner.DurableRunner`` (durable-rules, the default and the oracle) and
``python_runner.PythonRuleRunner`` (the same semantics in Python, through the condition kinds).
A differential test keeps them firing the same rules with the same bindings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from memkg.errors import MemkgError
from memkg.rules.kinds.checks import MAX_PROPERTIES
from memkg.rules.kinds.compare import lookup


class RuleEvaluationError(MemkgError, RuntimeError):
    """The matcher failed; no decision was made from its partial output."""

    code = "rules.evaluation_failed"


@dataclass(frozen=True)
class Firing:
    """One way a rule matched: pattern alias → id of the message bound to it."""

    rule: str
    bound: dict[str, str]


class RuleRunner(Protocol):
    def run(self, ruleset: str, messages: Sequence[dict[str, Any]]) -> list[Firing]:
        """Match ``messages`` (the context message last) against ``ruleset``: every way each
        rule matches, with the index (as text) of the message bound to each pattern."""
        ...


def check_widths(messages: Sequence[dict[str, Any]], joins: Sequence[str] = ()) -> None:
    """``RuleEvaluationError`` if a message would reach durable-rules holding more than
    ``MAX_PROPERTIES`` properties: its names and those of the objects it holds, the three typed
    copies of each property ``joins`` read (``compare.join_copies``), ``sid`` and ``id``. Both
    runners check it, so they answer alike; most messages hold no object and are told by their
    length alone."""
    room = MAX_PROPERTIES - 2 - 3 * len(joins)
    for message in messages:
        if len(message) <= room and dict not in map(type, message.values()):
            continue
        width = 2 + _width(message) + 3 * sum(lookup(message, p) is not None for p in joins)
        if width > MAX_PROPERTIES:
            context = message.get("t") == "context"
            what = (
                "the request context (its fields, the negation flags)" if context
                else f"{message.get('t')} {str(message.get('key') or message.get('to'))[:80]}"
            )  # fmt: skip
            raise RuleEvaluationError(
                f"{what} would reach durable-rules as a message of {width} properties, "
                "counting the names in the objects it holds and the copies joins read; "
                f"durable-rules holds at most {MAX_PROPERTIES}: send or store fewer names in "
                "an object",
            )


def _width(message: dict[str, Any]) -> int:
    """How many properties durable-rules counts in ``message``: its names, and those of every
    object in it (an object inside a list is not counted)."""
    width, stack = 0, [message]
    while stack:
        item = stack.pop()
        width += len(item)
        stack.extend(value for value in item.values() if isinstance(value, dict))
    return width
