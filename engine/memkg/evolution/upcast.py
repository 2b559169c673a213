"""Upcasters: read a fact stored under an old key version as the current version says.

Keyed by ``(domain, key, from_version)``; each turns the fact's value into the next version's
key and value with a plan's expression. Only single-target steps (rename, mapped or derived
value) upcast: a split or merge needs the other keys' facts and is written by ``apply``, and
so is a step that changes which parts of the value are ``x-pii: hash`` (hashing needs the
user's salt; a hash cannot be read back as clear text).
An upcast that the old value cannot feed, or whose result the new schema refuses, leaves the
fact as stored. The log is never changed: upcasting is a view on read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memkg.model.fact import Fact

from .migration import MigrationPlan
from .outcome import KeyPolicy
from .transform import Value, evaluate


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
        self._by_source: dict[tuple[str, str, int], Upcaster] = {}

    def __len__(self) -> int:
        return len(self._by_source)

    def get(self, domain: str, key: str, version: int) -> Upcaster | None:
        return self._by_source.get((domain, key, version))

    def register(self, plan: MigrationPlan, old: Mapping[str, KeyPolicy],
                 new: Mapping[str, KeyPolicy]) -> None:  # fmt: skip
        """Add an upcaster for every single-target step of ``plan``."""
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
                self._by_source[(plan.domain, key, old[key].version)] = Upcaster(
                    target.key, new[target.key].version, target.value, new[target.key], plan.name
                )

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
