"""What a plan makes of each stored fact: new values, checked against the new key schemas.

The same outcome drives the dry run (counted, never written) and the apply (written as
events), so what was reviewed is what is applied.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from memkg.model.fact import Fact, Sensitivity

from .migration import MigrationError, MigrationPlan, Step, Target
from .transform import Ask, Unmappable, Value, evaluate

Status = Literal["migrated", "unchanged", "unmappable", "invalid", "dropped"]


class KeyPolicy(Protocol):
    """What the dry run needs of a key's spec (``validate.registry.KeySpec`` fits)."""

    @property
    def schema(self) -> dict[str, Any]: ...
    @property
    def sensitivity(self) -> Sensitivity: ...
    @property
    def consent(self) -> bool: ...
    @property
    def version(self) -> int: ...
    @property
    def validator(self) -> Any: ...


@dataclass(frozen=True)
class NewValue:
    key: str
    value: Any
    unknown: bool = False


@dataclass(frozen=True)
class FactOutcome:
    user_id: str
    facts: tuple[Fact, ...]
    """The old fact (a merge: the newest live fact of each merged key)."""
    status: Status
    outputs: tuple[NewValue, ...] = ()
    questions: tuple[tuple[str, str], ...] = ()
    """(new key, question): where the plan asks the user instead of writing a value."""
    problems: tuple[str, ...] = ()
    reason: str = ""
    lossy: bool = False

    @property
    def old(self) -> dict[str, Any]:
        return {f.key: f.value for f in self.facts}

    def example(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "fact_ids": [f.id for f in self.facts], "old": self.old,
                "new": {o.key: o.value for o in self.outputs},
                "questions": dict(self.questions), "problems": list(self.problems),
                **({"reason": self.reason} if self.reason else {})}  # fmt: skip


def plan_problems(plan: MigrationPlan, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Raise if a step reads a key the old group lacks or writes one the new group lacks."""
    for step in plan.steps:
        for key in step.keys:
            if key not in old:
                raise MigrationError(
                    f"{plan.group}@{plan.from_version} declares no key {key}",
                    file=plan.file,
                    line=step.line,
                    code="migration.unknown_key",
                )
        for target in step.targets:
            if target.key not in new:
                raise MigrationError(
                    f"{plan.to_group}@{plan.to_version} declares no key {target.key}",
                    file=plan.file, line=target.line, code="migration.unknown_key")  # fmt: skip


def effective_steps(plan: MigrationPlan, old: Mapping[str, Any], new: Mapping[str, Any]
                    ) -> list[Step]:  # fmt: skip
    """The plan's steps, plus an identity step for each old key no step names."""
    named = {k for s in plan.steps for k in s.keys}
    steps = list(plan.steps)
    for key in sorted(set(old) - named):
        steps.append(Step("transform", (key,), (Target(key, {"copy": ""}, 0),), 0))
    return steps


def migrate(plan: MigrationPlan, facts: Iterable[Fact], old: Mapping[str, KeyPolicy],
            new: Mapping[str, KeyPolicy]) -> list[FactOutcome]:  # fmt: skip
    """The outcome of every live fact of the old group (others are not the plan's business)."""
    steps = effective_steps(plan, old, new)
    by_key = {k: s for s in steps for k in s.keys}
    mine = [f for f in facts if f.domain == plan.domain and f.key in by_key
            and f.schema_version == old[f.key].version]  # fmt: skip
    outcomes = []
    for fact in sorted(mine, key=lambda f: (f.user_id, f.seq, f.id)):
        step = by_key[fact.key]
        if step.kind != "merge":
            outcomes.append(_one(step, (fact,), fact.value, new))
    for step in (s for s in steps if s.kind == "merge"):
        slots: dict[tuple[Any, ...], dict[str, Fact]] = {}
        for fact in (f for f in mine if f.key in step.keys):
            slot = (fact.user_id, fact.scope, fact.session_id, tuple(sorted(fact.context.items())))
            held = slots.setdefault(slot, {})
            if fact.key not in held or (fact.seq, fact.id) > (
                held[fact.key].seq,
                held[fact.key].id,
            ):
                held[fact.key] = fact
        for _, held in sorted(slots.items(), key=lambda item: str(item[0])):
            group = tuple(held[k] for k in step.keys if k in held)
            outcomes.append(_one(step, group, {f.key: f.value for f in group}, new))
    return _mark_lossy(outcomes)


def _one(step: Step, facts: tuple[Fact, ...], value: Any, new: Mapping[str, KeyPolicy]
         ) -> FactOutcome:  # fmt: skip
    user = facts[0].user_id
    if step.kind == "drop":
        return FactOutcome(user, facts, "dropped", reason=step.reason, lossy=True)
    if not step.targets or any(t.key not in new for t in step.targets):
        missing = next(t.key for t in step.targets if t.key not in new) if step.targets else None
        return FactOutcome(user, facts, "unmappable", reason=(
            f"the new version declares no key {missing}" if missing else
            f"the new version has no key {facts[0].key} and no step moves its facts"))  # fmt: skip
    outputs: list[NewValue] = []
    questions: list[tuple[str, str]] = []
    for target in step.targets:
        result = evaluate(target.value, value)
        if isinstance(result, Unmappable):
            return FactOutcome(user, facts, "unmappable", reason=f"{target.key}: {result.reason}")
        if isinstance(result, Ask):
            questions.append((target.key, result.question))
        elif isinstance(result, Value):
            outputs.append(NewValue(target.key, result.value, result.unknown))
    problems = [p for out in outputs for p in _problems(out, new[out.key], facts)]
    same = (
        len(facts) == 1
        and len(outputs) == 1
        and not questions
        and outputs[0].key == facts[0].key
        and _canon(outputs[0].value) == _canon(value)
    )
    status: Status = "invalid" if problems else "unchanged" if same else "migrated"
    return FactOutcome(user, facts, status, tuple(outputs), tuple(questions), tuple(problems))


def _problems(out: NewValue, spec: KeyPolicy, facts: Sequence[Fact]) -> list[str]:
    found = [f"{out.key}{_where(e.absolute_path)}: {e.message}"
             for e in spec.validator.iter_errors(out.value)]  # fmt: skip
    if spec.sensitivity is Sensitivity.PROHIBITED:
        found.append(f"{out.key}: the new version marks the key prohibited: it cannot be stored")
    if spec.consent and not all(f.provenance.consent_granted for f in facts):
        found.append(f"{out.key}: the new version requires consent, which this fact lacks")
    return found


def _where(path: Iterable[Any]) -> str:
    parts = "".join(f"/{p}" for p in path)
    return f" at {parts}" if parts else ""


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _mark_lossy(outcomes: list[FactOutcome]) -> list[FactOutcome]:
    """Flag outcomes whose new values another, different old value also yields.

    Such facts cannot be told apart on the way back: a rollback would have to guess.
    """
    seen: dict[str, set[str]] = {}
    for o in outcomes:
        if o.status in ("migrated", "unchanged"):
            seen.setdefault(_signature(o), set()).add(_canon(o.old))
    out = []
    for o in outcomes:
        if o.status in ("migrated", "unchanged") and len(seen[_signature(o)]) > 1:
            o = FactOutcome(**{**o.__dict__, "lossy": True})
        out.append(o)
    return out


def _signature(outcome: FactOutcome) -> str:
    keys = sorted(f.key for f in outcome.facts)
    new = sorted((o.key, _canon(o.value)) for o in outcome.outputs)
    return _canon([keys, new, sorted(outcome.questions)])
