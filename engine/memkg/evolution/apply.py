"""The events that apply a plan to one fact: new facts assert, old facts are superseded.

Nothing is edited: the old fact keeps its value, version and provenance, and its history
shows the migration (``reason: migration:<name>``) and the fact that replaced it. The new
fact keeps the old one's source, confidence, scope, context, consent and audit id (a
migration changes the form of evidence, not its strength, so arbitration weighs it as
before; a merge only joins one source's claims, see ``outcome``), names the migration as
``provenance.source_ref`` and the old fact in ``supersedes``.
A value the new version marks ``x-pii: hash`` is stored hashed with the user's salt, as an
ingest would; the superseded fact keeps its clear text in history (the log is append-only)
until erasure, which the dry run says (``key.pii_hashed``).
Each fact's events are appended at once under ``idempotency_key``: a rerun after a crash
skips what was written and continues.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from memkg.clock import Clock
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import Fact, FactStatus, Kind, Sensitivity, SupersedeReason

from .migration import MigrationPlan
from .outcome import FactOutcome, KeyPolicy, Pii

_SENSITIVITY_ORDER = list(Sensitivity)


@dataclass(frozen=True)
class AsWritten:
    """What a write of a new fact decides beyond its key's spec, which a migrated fact of a
    new kind is taken as: how long a state holds when its key says nothing
    (``EngineConfig.state_valid_for``), and whether a source's ``fact`` claims hold without
    confirmation (``Sources.confirmed``)."""

    state_window: timedelta = timedelta(hours=72)
    confirmed: Callable[[str], bool] = lambda source: True


class NewKey(KeyPolicy, Protocol):
    """What the apply needs of a new version's key (``validate.registry.KeySpec`` fits)."""

    @property
    def valid_for_hours(self) -> int | None: ...


def idempotency_key(plan: MigrationPlan, outcome: FactOutcome) -> str:
    return f"{plan.source_ref}:{outcome.facts[0].id}"


def events_for(plan: MigrationPlan, outcome: FactOutcome, new: Mapping[str, NewKey],
               clock: Clock, pii: Pii, written: AsWritten = AsWritten()
               ) -> list[NewEvent]:  # fmt: skip
    """The events that carry out ``outcome`` (none for unchanged, unmappable, invalid).

    A new value is stored as an ingest would store it: hashed where its key's new version
    marks it ``x-pii: hash``."""
    if outcome.status == "dropped":
        return [_event(clock, EventType.FACT_RETRACTED, f,
                       {"fact_id": f.id, "reason": f"{plan.source_ref}: {outcome.reason}"})
                for f in outcome.facts]  # fmt: skip
    if outcome.status != "migrated":
        return []
    newest = max(outcome.facts, key=lambda f: (f.seq, f.id))
    created = [_new_fact(plan, outcome, newest, out.key, _stored(out.value, new[out.key],
                                                                 newest.user_id, pii),
                         new[out.key], clock, written) for out in outcome.outputs]  # fmt: skip
    events = [_event(clock, EventType.FACT_ASSERTED, f, {"fact": _dump(f)}) for f in created]
    for old in outcome.facts:
        if created:
            by = next((f for f in created if f.key == old.key), created[0])
            payload = {"fact_id": old.id, "by_fact_id": by.id, "detail": plan.source_ref,
                       "reason": SupersedeReason.MIGRATION.value}  # fmt: skip
            events.append(_event(clock, EventType.FACT_SUPERSEDED, old, payload))
        else:
            asked = "; ".join(q for _, q in outcome.questions)
            payload = {"fact_id": old.id, "reason": f"{plan.source_ref}: asking the user: {asked}"}
            events.append(_event(clock, EventType.FACT_RETRACTED, old, payload))
    return events


def _new_fact(plan: MigrationPlan, outcome: FactOutcome, newest: Fact, key: str, value: Any,
              spec: NewKey, clock: Clock, written: AsWritten) -> Fact:  # fmt: skip
    """A merged fact is no surer than its least certain part: the lowest confidence, the
    earliest expiry, and frozen or unconfirmed when any part is (its parts share a source).
    It is never less sensitive than its parts (a caller may have raised one above its key's
    default), and keeps a stated change. A new kind is taken as a write of it would be
    (``written``): a state with no expiry expires its key's ``valid_for_hours`` (else the
    engine's window) after it was observed, a state's expiry does not outlive it as another
    kind, and a ``fact`` from a source that does not confirm its records waits for the user."""
    held = {f.status for f in outcome.facts}
    status = next((s for s in _UNSETTLED if s in held), FactStatus.ACTIVE)
    now_fact = spec.kind is Kind.FACT and any(f.kind is not Kind.FACT for f in outcome.facts)
    if status is FactStatus.ACTIVE and now_fact and not written.confirmed(newest.source):
        status = FactStatus.PENDING_CONFIRMATION
    # a state's window does not outlive it as another kind, unless it is over already: an
    # expired state stays expired (its status is active until the sweep writes it expired)
    now = clock.now()
    expiries = [f.valid_until for f in outcome.facts if f.valid_until is not None
                and (spec.kind is Kind.STATE or f.kind is not Kind.STATE
                     or f.valid_until <= now)]  # fmt: skip
    if not expiries and spec.kind is Kind.STATE:
        hours = spec.valid_for_hours
        window = timedelta(hours=hours) if hours else written.state_window
        expiries = [newest.observed_at + window]
    sensitivity = max((spec.sensitivity, *(f.sensitivity for f in outcome.facts)),
                      key=_SENSITIVITY_ORDER.index)  # fmt: skip
    return Fact(
        id=clock.new_id("fact"), user_id=newest.user_id, domain=plan.domain, key=key,
        value=value, kind=spec.kind, source=newest.source,
        confidence=min(f.confidence for f in outcome.facts), scope=newest.scope,
        session_id=newest.session_id, observed_at=newest.observed_at, recorded_at=clock.now(),
        valid_until=min(expiries) if expiries else None,
        provenance=newest.provenance.model_copy(update={"source_ref": plan.source_ref}),
        sensitivity=sensitivity, status=status, schema_version=spec.version,
        context=dict(newest.context), supersedes=newest.id,
        change=any(f.change for f in outcome.facts),
    )  # fmt: skip


def _stored(value: Any, spec: NewKey, user_id: str, pii: Pii) -> Any:
    return pii.hash(user_id, value, spec.hashed_paths) if spec.hashed_paths else value


_UNSETTLED = (FactStatus.FROZEN, FactStatus.PENDING_CONFIRMATION)


def _event(clock: Clock, kind: EventType, fact: Fact, payload: dict[str, Any]) -> NewEvent:
    return NewEvent(event_id=clock.new_id("evt"), type=kind, user_id=fact.user_id,
                    domain=fact.domain, payload=payload, recorded_at=clock.now(), fact_id=fact.id,
                    audit_log_id=fact.provenance.audit_log_id)  # fmt: skip


def _dump(fact: Fact) -> dict[str, Any]:
    return fact.model_dump(
        mode="json", exclude={"seq", "superseded_by", "supersede_reason", "status_reason"}
    )
