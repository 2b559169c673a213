"""Interaction signals: ``signal.recorded`` events that move the weight of an edge.

A signal says the user interacted with the edge ``user ─key→ value`` of one domain: mentioned
it again, corrected it, ignored a suggestion based on it, or rejected what it led to ("not China
Eastern again"). It is an event in the user's log like every write, so weights rebuild exactly.

A signal counts for the claims of that edge recorded before it (``fact.seq < signal.seq``):
a claim asserted later is new evidence and starts clean. A signal needs a live claim of the
edge when it is recorded, so a typo cannot write a signal that moves nothing, and the value it
stores is the one memory already holds (a hashed value stays hashed). The event carries the
newest such claim's fact and audit ids, so erasing that fact erases the signal too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from memkg.errors import InvalidOperation
from memkg.graph.claims import EntityKeys, Target, target_of, targets
from memkg.model.event import Event, EventType, NewEvent, StoredRow, row_payload, row_time
from memkg.model.fact import Fact, Identifier
from memkg.model.weight import SIGNAL_KINDS, Signal, SignalKind


class SignalRecord(BaseModel):
    """One stored signal, read back from its event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: str
    seq: int
    domain: str
    key: str
    target: str
    """Entity reference or canonical JSON literal, as in ``claims.Target``."""
    entity: bool
    kind: SignalKind
    at: datetime
    session_id: str | None = None

    def as_signal(self) -> Signal:
        return Signal(self.kind, self.at, self.event_id)


_SESSION: TypeAdapter[str] = TypeAdapter(Identifier)
"""What a session id may be: as on a fact (``Observation.session_id``)."""


def read_signal(event: Event) -> SignalRecord:
    return signal_record(event.event_id, event.seq, event.domain, event.payload,
                         event.recorded_at)  # fmt: skip


def row_signal(row: StoredRow) -> SignalRecord:
    """The signal of a stored ``signal.recorded`` row (``read_signal`` of its event)."""
    return signal_record(row[1], row[0], row[5], row_payload(row), row_time(row))


def signal_record(
    event_id: str, seq: int, domain: str | None, payload: dict[str, Any], at: datetime
) -> SignalRecord:
    return SignalRecord(
        event_id=event_id,
        seq=seq,
        domain=domain or "",
        key=payload["key"],
        target=payload["target"],
        entity=payload["entity"],
        kind=payload["kind"],
        at=at,
        session_id=payload.get("session_id"),
    )


def signal_event(
    *,
    user_id: str,
    domain: str,
    key: str,
    value: Any,
    kind: str,
    session_id: str | None,
    live_facts: Iterable[Fact],
    entity_keys: EntityKeys,
    event_id: str,
    now: datetime,
) -> NewEvent:
    """The event recording one signal, or ``InvalidOperation`` saying what is wrong (the
    value is one a fact could hold: ``validate.limits`` checked it)."""
    if kind not in SIGNAL_KINDS:
        raise InvalidOperation(
            f"signal kind {kind!r:.40} is not one of {', '.join(SIGNAL_KINDS)}",
            code="signal.kind",
        )
    if session_id is not None:
        try:
            _SESSION.validate_python(session_id)
        except ValidationError:
            raise InvalidOperation(
                f"session_id {session_id!r:.60} is not a session id: 1-128 letters, digits "
                "and _ . : @ -, starting with a letter or digit (as on a fact)",
                code="signal.session_id",
            ) from None
    target = target_of(domain, key, value, entity_keys)
    if target is None:
        raise InvalidOperation(
            f"{key:.80} names entities: signal one entity reference (type:name), not {value!r:.80}",
            code="signal.value",
        )
    claims = sorted(
        (
            f
            for f in live_facts
            if f.domain == domain and f.key == key and _asserts(f, target, entity_keys)
        ),
        key=lambda f: (f.seq, f.id),
    )
    if not claims:
        raise InvalidOperation(
            f"user {user_id} has no live claim {key:.80} → {target.value:.80} in domain "
            f"{domain:.40}: record the fact first, or check the key and value",
            code="signal.no_edge",
        )
    newest = claims[-1]
    payload: dict[str, Any] = {"key": key, "target": target.value, "entity": target.entity,
                               "kind": kind, "fact_ids": [f.id for f in claims]}  # fmt: skip
    if session_id is not None:
        payload["session_id"] = session_id
    return NewEvent(
        event_id=event_id,
        type=EventType.SIGNAL_RECORDED,
        user_id=user_id,
        domain=domain,
        payload=payload,
        recorded_at=now,
        fact_id=newest.id,
        audit_log_id=newest.provenance.audit_log_id,
    )


def _asserts(fact: Fact, target: Target, entity_keys: EntityKeys) -> bool:
    return target in targets(fact.domain, fact.key, fact.value, entity_keys)
