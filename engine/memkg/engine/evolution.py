"""The evolution stage, wired: schema history, migration dry runs and applies; reads upcast
old facts through ``Setup.upcasters``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memkg.clock import Clock
from memkg.decisions.log import DecisionLog
from memkg.engine.intent import Decider
from memkg.engine.journal import Journal
from memkg.engine.migrations import ApplyReport
from memkg.engine.migrations import apply as apply_plan
from memkg.engine.migrations import dry_run as dry_run_plan
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_count
from memkg.events.store import EventStore
from memkg.evolution.dry_run import DryRunReport
from memkg.evolution.history import schema_history
from memkg.evolution.migration import MigrationPlan


@dataclass(eq=False, repr=False)
class Evolution:
    """Schema evolution (logic in ``memkg.evolution``); see ``memkg.Engine``."""

    setup: Setup
    store: EventStore
    projections: Projections
    journal: Journal
    decider: Decider
    decision_log: DecisionLog
    clock: Clock

    def schema_history(self, domain: str, key: str | None = None) -> dict[str, Any]:
        """Every version of the domain's key groups (or of one key) under ``schemas/``."""
        layers = self.setup.layers
        return schema_history(layers.domains().get(domain, layers.paths[0]), domain, key)

    def migration_dry_run(
        self, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
        waiver: str | Path | None = None, decisions: int = 20,
        progress: Callable[[int], None] | None = None,
    ) -> DryRunReport:  # fmt: skip
        """What ``plan`` would do to every user's facts, the rules and recent decisions.

        ``progress`` is called with the number of users read so far."""
        check_count(decisions, "decisions", 0, "recent logged decisions per user to replay")
        return dry_run_plan(self, plan, rules=rules, waiver=waiver, decisions=decisions,
                            progress=progress)  # fmt: skip

    def apply_migration(
        self, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
        waiver: str | Path | None = None, progress: Callable[[int], None] | None = None,
    ) -> ApplyReport:  # fmt: skip
        """Apply a plan whose dry run does not BLOCK; rerun it to resume after a crash."""
        return apply_plan(self, plan, rules=rules, waiver=waiver, progress=progress)
