"""A table's plan says whether its rules read the local clock (so the user's time zone)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from memkg import Engine
from memkg.rules.plan import plan_table
from memkg.rules.spec import RuleTable


def _table(name: str) -> RuleTable:
    table = Engine().intent.rules.bundle.table("health", name)
    assert table is not None
    return table


def test_a_local_time_window_reads_the_clock() -> None:
    assert plan_table(_table("triage")).clock


def test_rules_on_memory_and_request_alone_do_not() -> None:
    assert not plan_table(_table("medication")).clock


def test_effective_dates_read_the_clock() -> None:
    table = _table("medication")
    dated = replace(table.rules[0], effective_from=date(2026, 1, 1))
    assert plan_table(replace(table, rules=(dated, *table.rules[1:]))).clock
