"""The work a single compatibility check may do, counted in units rather than seconds.

Every step whose cost is bounded by the schemas' size is charged one unit: comparing a case
with a subschema, expanding a conjunction, generating a candidate document, validating one.
A check that runs out stops and answers "undecided", saying so; it never runs long.
"""

from __future__ import annotations

DEFAULT_BUDGET = 20_000


class OverBudget(Exception):
    """Raised inside the checker when the budget is spent; never leaves `check_schema_change`."""


class Budget:
    """Units spent so far against a limit; `charge` raises `OverBudget` past the limit."""

    __slots__ = ("limit", "spent")

    def __init__(self, limit: int = DEFAULT_BUDGET) -> None:
        self.limit = limit
        self.spent = 0

    def charge(self, units: int = 1) -> None:
        if self.spent + units > self.limit:
            self.spent = self.limit
            raise OverBudget(f"the check used its budget of {self.limit} work units")
        self.spent += units
