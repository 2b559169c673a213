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
