"""What a plan makes of each stored fact: new values, checked against the new key schemas.

The same outcome drives the dry run (counted, never written) and the apply (written as
events), so what was reviewed is what is applied.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from memkg.model.fact import Fact, Kind, Sensitivity

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
    def kind(self) -> Kind: ...
    @property
    def version(self) -> int: ...
    @property
    def validator(self) -> Any: ...
    @property
    def hashed_paths(self) -> tuple[tuple[str, ...], ...]: ...


class Pii(Protocol):
    """How memory stores ``x-pii: hash`` values: the engine wires ``validate.guards``."""

    def hash(self, user_id: str, value: Any, paths: tuple[tuple[str, ...], ...]) -> Any:
        """``value`` with the clear strings at ``paths`` replaced by the user's salted HMAC
        (HMACs already there kept)."""
        ...

    def is_hash(self, text: str) -> bool:
        """Whether ``text`` is such an HMAC."""
        ...

    def refused(self, spec: KeyPolicy, fact: Fact, value: Any) -> list[str]:
        """Why a write of ``value`` (``fact``'s new value) would be refused beyond the key's
        schema and consent (checked here): the write's limits, its guards on text, its
        shapes; each as ``message (code)``."""
        ...


@dataclass(frozen=True)
class NewValue:
    key: str
    value: Any
    unknown: bool = False
    hashes: bool = False
    """The new version marks part of the value ``x-pii: hash`` and the value holds clear text
    there: the apply stores the user's HMAC instead (``Pii.hash``), as an ingest would."""


@dataclass(frozen=True)
class FactOutcome:
    user_id: str
    facts: tuple[Fact, ...]
    """The old fact (a merge: one source's live claim of each merged key it holds)."""
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
                **({"hashed": [o.key for o in self.outputs if o.hashes]}
                   if any(o.hashes for o in self.outputs) else {}),
                "questions": dict(self.questions), "problems": list(self.problems),
                **({"reason": self.reason} if self.reason else {})}  # fmt: skip


def plan_problems(plan: MigrationPlan, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Raise if a step reads a key the old group lacks, writes one the new group lacks, or
    writes one an old key no step reads keeps (two writers of one key)."""
    kept = set(old) - {k for s in plan.steps for k in s.keys}
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
            if target.key in kept:
                raise MigrationError(
                    f"{target.key} is kept as it is (no step reads it) and written by this step "
                    f"too: a user holding both would get two claims of it; add a step that "
                    f"reads it: drop it ({{key: {target.key}, drop: WHY}}), or join it with "
                    f"{', '.join(step.keys)} in one `merge` step",
                    file=plan.file, line=target.line)  # fmt: skip


def effective_steps(plan: MigrationPlan, old: Mapping[str, Any], new: Mapping[str, Any]
                    ) -> list[Step]:  # fmt: skip
    """The plan's steps, plus an identity step for each old key no step names."""
    named = {k for s in plan.steps for k in s.keys}
    steps = list(plan.steps)
    for key in sorted(set(old) - named):
        steps.append(Step("transform", (key,), (Target(key, {"copy": ""}, 0),), 0))
    return steps


Place = tuple[Any, ...]
"""Where ``migrate`` lists an outcome: the strays first (in the order of their facts, batch by
batch), then single facts by user, log position and id, then each merge step's slots."""


def migrate(plan: MigrationPlan, facts: Iterable[Fact], old: Mapping[str, KeyPolicy],
            new: Mapping[str, KeyPolicy], pii: Pii) -> list[FactOutcome]:  # fmt: skip
    """The outcome of every live fact of the old group's keys (others are not the plan's
    business); one stored under neither the plan's old nor its new version is unmappable."""
    return _mark_lossy([o for _, o in ordered(plan, facts, old, new, pii)])


def ordered(plan: MigrationPlan, facts: Iterable[Fact], old: Mapping[str, KeyPolicy],
            new: Mapping[str, KeyPolicy], pii: Pii, *, batch: int = 0
            ) -> list[tuple[Place, FactOutcome]]:  # fmt: skip
    """``migrate``'s outcomes before lossy ones are marked (``Losses``), each with its place.

    Places of outcomes from several calls, one per user, sort as ``migrate`` would list the
    outcomes of all their facts at once, given each call its own ``batch``, counting up."""
    steps = effective_steps(plan, old, new)
    by_key = {k: s for s in steps for k in s.keys}
    ours = [f for f in facts if f.domain == plan.domain and f.key in by_key]
    mine = [f for f in ours if f.schema_version == old[f.key].version]
    strays = [f for f in ours if f.schema_version != old[f.key].version
              and not (f.key in new and f.schema_version == new[f.key].version)]  # fmt: skip
    found: list[tuple[Place, FactOutcome]] = [
        ((0, batch, n), _stray(f, plan)) for n, f in enumerate(strays)
    ]
    for fact in sorted(mine, key=lambda f: (f.user_id, f.seq, f.id)):
        step = by_key[fact.key]
        if step.kind != "merge":
            found.append(((1, fact.user_id, fact.seq, fact.id),
                          _one(step, (fact,), fact.value, new, pii)))  # fmt: skip
    for n, step in enumerate(s for s in steps if s.kind == "merge"):
        found += [((2, n, label), o) for label, o in
                  _merged(step, [f for f in mine if f.key in step.keys], new, pii)]  # fmt: skip
    return found


def _stray(fact: Fact, plan: MigrationPlan) -> FactOutcome:
    """A live fact of one of the plan's keys stored under another version than either end."""
    return FactOutcome(
        fact.user_id,
        (fact,),
        "unmappable",
        reason=(
            f"stored under version {fact.schema_version}, but the plan reads {plan.group}@"
            f"{plan.from_version}: migrate it to version {plan.from_version} first (or retract it)"
        ),
    )


def _merged(step: Step, facts: Sequence[Fact], new: Mapping[str, KeyPolicy], pii: Pii
            ) -> list[tuple[str, FactOutcome]]:  # fmt: skip
    """One outcome per source's claims in each slot (user, scope, session, context), with the
    slot as text, which orders them.

    Sources are never mixed: a merged claim holds what one source said, so it keeps that
    source's credibility and the disagreement between sources survives the migration for
    arbitration to weigh. A source with two live claims of one merged key in a slot gives
    no single claim to merge with the others: its facts are unmappable, each named.
    """
    slots: dict[tuple[Any, ...], list[Fact]] = {}
    for fact in facts:
        slot = (
            fact.user_id,
            fact.scope.value,
            fact.session_id or "",
            tuple(sorted((k, str(v)) for k, v in fact.context.items())),
            fact.source.value,
        )
        slots.setdefault(slot, []).append(fact)
    outcomes: list[tuple[str, FactOutcome]] = []
    for label, slot in sorted((str(slot), slot) for slot in slots):
        claims = slots[slot]
        ordered = tuple(sorted(claims, key=lambda f: (step.keys.index(f.key), f.seq, f.id)))
        keys = [f.key for f in ordered]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            named = ", ".join(f"{f.id} ({f.key} = {f.value!r})" for f in ordered
                              if f.key in twice)  # fmt: skip
            outcomes.append((label, FactOutcome(ordered[0].user_id, ordered, "unmappable",
                                                reason=(
                f"source {slot[-1]} holds several live claims of {', '.join(twice)} in one slot "
                f"({named}): a merge cannot tell which belongs with the other keys; confirm or "
                "retract all but one, then run the plan again"))))  # fmt: skip
            continue
        merged = _one(step, ordered, {f.key: f.value for f in ordered}, new, pii)
        if merged.status == "unmappable":
            merged = replace(merged, reason=f"{merged.reason} (merging what source {slot[-1]} "
                             f"said in this slot: {', '.join(keys)} only)")  # fmt: skip
        outcomes.append((label, merged))
    return outcomes


def _one(step: Step, facts: tuple[Fact, ...], value: Any, new: Mapping[str, KeyPolicy],
         pii: Pii) -> FactOutcome:  # fmt: skip
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
            paths = new[target.key].hashed_paths
            leaked = [p for p, text in _strings(result.value)
                      if pii.is_hash(text) and not _hashed(p, paths)]  # fmt: skip
            if leaked:
                return FactOutcome(user, facts, "unmappable", reason=(
                    f"{target.key}{_where(leaked[0])}: holds an HMAC (stored under x-pii: hash) "
                    "where the new version keeps clear text; a hash cannot be turned back into "
                    "what the user said: drop the key, ask the user again (`ask:`), or keep "
                    "x-pii: hash"))  # fmt: skip
            clear = any(_hashed(p, paths) and not pii.is_hash(t) for p, t in _strings(result.value))
            outputs.append(NewValue(target.key, result.value, result.unknown, clear))
    problems = [p for out in outputs for p in _problems(out, new[out.key], facts, pii)]
    same = (
        len(facts) == 1
        and len(outputs) == 1
        and not questions
        and outputs[0].key == facts[0].key
        and facts[0].kind is new[outputs[0].key].kind  # a new kind is written anew (apply)
        and not outputs[0].hashes
        and _canon(outputs[0].value) == _canon(value)
    )
    status: Status = "invalid" if problems else "unchanged" if same else "migrated"
    return FactOutcome(user, facts, status, tuple(outputs), tuple(questions), tuple(problems))


def _problems(out: NewValue, spec: KeyPolicy, facts: Sequence[Fact], pii: Pii) -> list[str]:
    found = [f"{out.key}{_where(e.absolute_path)}: {e.message}"
             for e in spec.validator.iter_errors(out.value)
             if not _prehashed(tuple(e.absolute_path), e.instance, spec, pii)]  # fmt: skip
    if not found:  # as a write is refused: limits, the guards on text, the shapes
        found = [f"{out.key}: {why}" for why in pii.refused(spec, facts[-1], out.value)]
    if spec.sensitivity is Sensitivity.PROHIBITED:
        found.append(f"{out.key}: the new version marks the key prohibited: it cannot be stored")
    # as a write is refused (``validate.guards``): special-category data needs consent too
    special = spec.sensitivity is Sensitivity.SPECIAL
    if (spec.consent or special) and not all(f.provenance.consent_granted for f in facts):
        why = "requires" if spec.consent else "marks the key special-category data, which needs"
        found.append(f"{out.key}: the new version {why} consent, which this fact lacks")
    return found


def _prehashed(path: tuple[Any, ...], node: Any, spec: KeyPolicy, pii: Pii) -> bool:
    """An HMAC memory already holds: its clear text was checked when it was written, so the
    schema's pattern or format no longer applies to it (as on ingest)."""
    return isinstance(node, str) and pii.is_hash(node) and _hashed(path, spec.hashed_paths)


def _strings(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every string in ``value`` with its path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, (*path, i))
    elif isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, (*path, name))


def _hashed(path: tuple[Any, ...], patterns: tuple[tuple[str, ...], ...]) -> bool:
    """Whether a pattern of ``hashed_paths`` (``*``: any array item) names ``path``."""
    return any(len(p) == len(path)
               and all(a == "*" or a == str(b) for a, b in zip(p, path, strict=True))
               for p in patterns)  # fmt: skip


def _where(path: Iterable[Any]) -> str:
    parts = "".join(f"/{p}" for p in path)
    return f" at {parts}" if parts else ""


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _mark_lossy(outcomes: list[FactOutcome]) -> list[FactOutcome]:
    """Flag outcomes whose new values another, different old value also yields (``Losses``)."""
    losses = Losses()
    for o in outcomes:
        losses.note(o)
    out = []
    for o in outcomes:
        if losses.lossy(o):
            o = FactOutcome(**{**o.__dict__, "lossy": True})
        out.append(o)
    return out


_KEPT = ("migrated", "unchanged")


class Losses:
    """Which new values more than one old value yields, noted outcome by outcome.

    Such facts cannot be told apart on the way back: a rollback would have to guess. Whether
    an outcome is lossy is known once every outcome has been noted."""

    def __init__(self) -> None:
        self._old: dict[str, str | None] = {}
        """Signature → the one old value that yields it; None once two different ones do."""

    def note(self, outcome: FactOutcome) -> None:
        if outcome.status in _KEPT:
            signature, old = _signature(outcome), _canon(outcome.old)
            if self._old.setdefault(signature, old) not in (old, None):
                self._old[signature] = None

    def lossy(self, outcome: FactOutcome) -> bool:
        return outcome.status in _KEPT and self._old.get(_signature(outcome), "") is None

    def found(self) -> bool:
        """Whether any outcome noted is lossy."""
        return None in self._old.values()


def _signature(outcome: FactOutcome) -> str:
    keys = sorted(f.key for f in outcome.facts)
    new = sorted((o.key, _canon(o.value)) for o in outcome.outputs)
    return _canon([keys, new, sorted(outcome.questions)])
