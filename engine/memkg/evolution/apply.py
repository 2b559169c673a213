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

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

from memkg.clock import Clock
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import Fact, FactStatus, Kind, SupersedeReason

from .migration import MigrationPlan
from .outcome import FactOutcome, KeyPolicy, Pii

STATE_WINDOW = timedelta(hours=72)
"""How long a state holds when its key says nothing (``EngineConfig.state_valid_for``)."""


class KeySpecWithKind(KeyPolicy, Protocol):
    @property
    def valid_for_hours(self) -> int | None: ...


def idempotency_key(plan: MigrationPlan, outcome: FactOutcome) -> str:
    return f"{plan.source_ref}:{outcome.facts[0].id}"


def events_for(plan: MigrationPlan, outcome: FactOutcome, new: Mapping[str, KeySpecWithKind],
               clock: Clock, pii: Pii, state_window: timedelta = STATE_WINDOW
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
                         new[out.key], clock, state_window) for out in outcome.outputs]  # fmt: skip
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
              spec: KeySpecWithKind, clock: Clock, state_window: timedelta) -> Fact:  # fmt: skip
    """A merged fact is no surer than its least certain part: the lowest confidence, the
    earliest expiry, and frozen or unconfirmed when any part is (its parts share a source).
    A state with no expiry (its key was another kind) expires as a write of it would: its
    key's ``valid_for_hours`` (else ``state_window``) after it was observed."""
    held = {f.status for f in outcome.facts}
    status = next((s for s in _UNSETTLED if s in held), FactStatus.ACTIVE)
    expiries = [f.valid_until for f in outcome.facts if f.valid_until is not None]
    if not expiries and spec.kind is Kind.STATE:
        hours = spec.valid_for_hours
        expiries = [newest.observed_at + (timedelta(hours=hours) if hours else state_window)]
    return Fact(
        id=clock.new_id("fact"), user_id=newest.user_id, domain=plan.domain, key=key,
        value=value, kind=spec.kind, source=newest.source,
        confidence=min(f.confidence for f in outcome.facts), scope=newest.scope,
        session_id=newest.session_id, observed_at=newest.observed_at, recorded_at=clock.now(),
        valid_until=min(expiries) if expiries else None,
        provenance=newest.provenance.model_copy(update={"source_ref": plan.source_ref}),
        sensitivity=spec.sensitivity, status=status, schema_version=spec.version,
        context=dict(newest.context), supersedes=newest.id,
    )  # fmt: skip


def _stored(value: Any, spec: KeySpecWithKind, user_id: str, pii: Pii) -> Any:
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
