"""The decision log: every decision recorded in full, to explain and replay it later."""

from memkg.decisions.diff import Difference, differences
from memkg.decisions.log import DecisionLog, MemoryDecisionLog
from memkg.decisions.postgres import PostgresDecisionLog
from memkg.decisions.sqlite import SqliteDecisionLog

__all__ = [
    "DecisionLog",
    "Difference",
    "MemoryDecisionLog",
    "PostgresDecisionLog",
    "SqliteDecisionLog",
    "differences",
]
