"""The evolution layer: schema history, migration dry runs and applies, upcasting reads."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from memkg.engine.lifecycle import LifecycleLayer
from memkg.engine.migrations import ApplyReport
from memkg.engine.migrations import apply as apply_plan
from memkg.engine.migrations import dry_run as dry_run_plan
from memkg.evolution.dry_run import DryRunReport
from memkg.evolution.history import schema_history
from memkg.evolution.migration import MigrationPlan, load_plan
from memkg.evolution.upcast import Upcasters
from memkg.model.fact import Fact


class EvolutionLayer(LifecycleLayer):
    """Schema evolution (logic in ``memkg.evolution``); see ``memkg.Engine``."""

    def _upcaster(self) -> Callable[[Fact], Fact] | None:
        return self.upcasters.upcast

    def schema_history(self, domain: str, key: str | None = None) -> dict[str, Any]:
        """Every version of the domain's key groups (or of one key) under ``schemas/``."""
        root = self.layers.domains().get(domain, self.layers.paths[0])
        return schema_history(root, domain, key)

    def migration_dry_run(
        self, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
        waiver: str | Path | None = None, decisions: int = 20,
        progress: Callable[[int], None] | None = None,
    ) -> DryRunReport:  # fmt: skip
        """What ``plan`` would do to every user's facts, the rules and recent decisions.

        ``progress`` is called with the number of users read so far."""
        return dry_run_plan(self, plan, rules=rules, waiver=waiver, decisions=decisions,
                            progress=progress)  # fmt: skip

    def apply_migration(
        self, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
        waiver: str | Path | None = None, progress: Callable[[int], None] | None = None,
    ) -> ApplyReport:  # fmt: skip
        """Apply a plan whose dry run does not BLOCK; rerun it to resume after a crash."""
        return apply_plan(self, plan, rules=rules, waiver=waiver, progress=progress)

    @cached_property
    def upcasters(self) -> Upcasters:
        """Upcasters of the plans under ``schemas/<domain>/migrations/`` (and applied ones)."""
        found = Upcasters()
        for folder in self.layers.schema_dirs().values():
            for path in sorted(folder.glob("migrations/*.yaml")):
                plan = load_plan(path, self.layers.root_of(path))
                old = self.registry.group(plan.domain, plan.group, plan.from_version)
                new = self.registry.group(plan.domain, plan.to_group, plan.to_version)
                found.register(plan, old, new)
        return found
