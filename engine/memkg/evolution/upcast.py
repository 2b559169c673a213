"""Upcasters: read a fact stored under an old key version as the current version says.

Keyed by ``(domain, key, from_version)``; each turns the fact's value into the next version's
key and value with a plan's expression. Only single-target steps (rename, mapped or derived
value) upcast: a split or merge needs the other keys' facts and is written by ``apply``, and
so is a step that changes which parts of the value are ``x-pii: hash`` (hashing needs the
user's salt; a hash cannot be read back as clear text).
An upcast that the old value cannot feed, or whose result the new schema refuses, leaves the
fact as stored. The log is never changed: upcasting is a view on read. Two plan files that
upcast the same key version are both left out (``Upcasters.of``): which one a read follows
would hang on the order the files were read in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memkg.model.fact import Fact

from .migration import MigrationError, MigrationPlan, Step
from .outcome import KeyPolicy
from .transform import Value, evaluate

Source = tuple[str, str, int]
"""What an upcaster reads: (domain, key, version)."""
Specs = Mapping[str, KeyPolicy]


@dataclass(frozen=True)
class Upcaster:
    to_key: str
    to_version: int
    expression: dict[str, Any]
    spec: KeyPolicy
    migration: str


class Upcasters:
    """The registry: ``(domain, key, from_version)`` → ``Upcaster``."""

    def __init__(self) -> None:
        self._by_source: dict[Source, Upcaster] = {}

    @classmethod
    def of(
        cls, plans: Iterable[tuple[MigrationPlan, Specs, Specs]]
    ) -> tuple[Upcasters, list[MigrationError]]:
        """The upcasters of ``plans`` (each with its old and new key specs), and a
        ``migration.conflict`` for each plan that upcasts a key version another plan file
        upcasts too: a read could follow either, so neither is registered."""
        each = [(plan, _steps(plan, old, new)) for plan, old, new in plans]
        claims: dict[Source, list[tuple[MigrationPlan, Step]]] = {}
        for plan, steps in each:
            for source, step, _ in steps:
                claims.setdefault(source, []).append((plan, step))
        refused: dict[str, MigrationError] = {}
        for (domain, key, version), claimants in sorted(claims.items()):
            files = sorted({plan.file for plan, _ in claimants})
            if len(files) < 2:
                continue
            for plan, step in claimants:
                others = ", ".join(f for f in files if f != plan.file)
                message = (
                    f"{others} also upcasts {key} of domain {domain} from version {version}: "
                    "a read could follow either plan, so neither is used; keep one plan for "
                    "the step (merge the two, or remove one)"
                )
                conflict = MigrationError(
                    message, file=plan.file, line=step.line, code="migration.conflict"
                )
                refused.setdefault(plan.file, conflict)
        upcasters = cls()
        for plan, steps in each:
            if plan.file not in refused:
                upcasters._by_source.update((source, up) for source, _, up in steps)
        return upcasters, list(refused.values())

    def __len__(self) -> int:
        return len(self._by_source)

    def get(self, domain: str, key: str, version: int) -> Upcaster | None:
        return self._by_source.get((domain, key, version))

    def register(self, plan: MigrationPlan, old: Specs, new: Specs) -> None:
        """Add an upcaster for every single-target step of ``plan``, in place of any other
        plan's for the same key version (a plan just applied is the one reads follow)."""
        self._by_source.update((source, up) for source, _, up in _steps(plan, old, new))

    def upcast(self, fact: Fact) -> Fact:
        """``fact`` as the newest registered version reads it (itself when none applies)."""
        for _ in range(64):  # a chain longer than this is a registry cycle
            found = self.get(fact.domain, fact.key, fact.schema_version)
            if found is None or (
                found.to_version == fact.schema_version and found.to_key == fact.key
            ):
                return fact
            result = evaluate(found.expression, fact.value)
            if not isinstance(result, Value) or not found.spec.validator.is_valid(result.value):
                return fact
            fact = fact.model_copy(update={"key": found.to_key, "value": result.value,
                                           "schema_version": found.to_version})  # fmt: skip
        return fact


def _steps(plan: MigrationPlan, old: Specs, new: Specs) -> list[tuple[Source, Step, Upcaster]]:
    """The single-target steps of ``plan`` that upcast, each with what it reads and its
    upcaster."""
    found = []
    for step in plan.steps:
        if step.kind != "transform" or len(step.targets) != 1:
            continue
        [target] = step.targets
        (key,) = step.keys
        if (
            key in old
            and target.key in new
            and (set(old[key].hashed_paths) == set(new[target.key].hashed_paths))
        ):
            upcaster = Upcaster(
                target.key, new[target.key].version, target.value, new[target.key], plan.name
            )
            found.append(((plan.domain, key, old[key].version), step, upcaster))
    return found
