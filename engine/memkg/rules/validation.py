"""Is a decision request well formed? Problems here make the decision ``invalid_input``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jsonschema import Draft202012Validator

from memkg.rules.spec import RuleBundle, RuleTable

DERIVED = ("local_time", "weekday", "today", "local_minutes")
"""Context fields memkg computes from the clock; a request may not set them."""


def request_problems(
    bundle: RuleBundle,
    domain: str,
    decision: str | None,
    table: RuleTable | None,
    context: Mapping[str, Any],
) -> list[str]:
    spec = bundle.domains.get(domain)
    if spec is None:
        return [f"no rules for domain {domain!r}; domains: {sorted(bundle.domains)}"]
    if table is None:
        names = sorted(n for d, n in bundle.tables if d == domain)
        which = f"no decision {decision!r}" if decision else "no default decision"
        return [f"domain {domain!r} has {which}; decisions: {names}"]
    problems = []
    for name, value in sorted(context.items()):
        if name in DERIVED:
            problems.append(f"context.{name} is computed from the clock; do not send it")
        elif name == "timezone":
            try:
                ZoneInfo(str(value))
            except (ZoneInfoNotFoundError, ValueError):
                problems.append(f"context.timezone {value!r} is not an IANA time zone")
        elif name not in spec.context:
            problems.append(
                f"context.{name} is not declared for domain {domain}; "
                f"declared: {sorted(spec.context)}"
            )
        else:
            for error in Draft202012Validator(spec.context[name]).iter_errors(value):
                problems.append(f"context.{name}: {error.message}")
    return problems
