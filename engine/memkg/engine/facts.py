"""The fact layer: validate observations, remember them as events, read current memory."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict

from memkg.arbitration.support import canon
from memkg.engine.base import EngineBase
from memkg.errors import InvalidOperation, MemoryDisabled, NotFound, ValidationFailed
from memkg.events.projection import UserMemory, fold_all
from memkg.events.retry import unconditional
from memkg.events.store import Companion, beside
from memkg.lifecycle.erasure import ErasureReceipt, erase_audit_id, erase_subject
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import (
    Fact,
    FactStatus,
    Kind,
    Observation,
    Scope,
    SupersedeReason,
)
from memkg.model.report import Problem, ValidationReport
from memkg.validate.validator import Checked

log = logging.getLogger(__name__)

"""``fact``-kind claims from these sources are records the user entered or a system verified:
active at once. From any other source a ``fact`` waits for the user's confirmation."""


class IngestResult(BaseModel):
    """What one accepted observation did to memory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str
    event_id: str
    seq: int
    status: FactStatus
    superseded: tuple[str, ...] = ()
    duplicate: bool = False
    version: int | None = None
    """The user's stream version this write left (for a duplicate: the original write's);
    pass it as ``expected_version`` to make the next write conditional on it."""


class IngestOutcome(BaseModel):
    """One line of a batch ingest: accepted with its result, or rejected with the report."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    accepted: bool
    result: IngestResult | None = None
    report: ValidationReport | None = None


class RebuildReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    users: int
    events: int
    facts: int
    seconds: float


class FactLayer(EngineBase):
    """Writes and reads of facts; see ``memkg.Engine``."""

    def validate(self, observation: Mapping[str, Any] | Observation) -> ValidationReport:
        """The report a write of ``observation`` would get; stores nothing."""
        [result] = self.validator.check_many([observation], self.clock.now(), self._salt)
        return result if isinstance(result, ValidationReport) else ValidationReport()

    def ingest(
        self,
        observation: Mapping[str, Any] | Observation,
        *,
        expected_version: int | None = None,
    ) -> IngestResult:
        """Validate and store one observation, or raise ``ValidationFailed`` storing nothing.

        ``expected_version`` is the user's stream version the caller last read; a concurrent
        write since then raises ``ConcurrencyConflict``.
        """
        [result] = self.validator.check_many([observation], self.clock.now(), self._salt)
        if isinstance(result, ValidationReport):
            raise ValidationFailed(result)
        return self._store_checked(result, expected_version)

    def ingest_many(
        self, observations: Sequence[Mapping[str, Any] | Observation]
    ) -> list[IngestOutcome]:
        """Validate a batch together (one SHACL run) and store each accepted observation."""
        checked = self.validator.check_many(observations, self.clock.now(), self._salt)
        outcomes = []
        with self.store.batch():
            for index, item in enumerate(checked):
                outcomes.append(self._store_one(index, item))
        return outcomes

    def _store_one(self, index: int, item: Checked | ValidationReport) -> IngestOutcome:
        if isinstance(item, ValidationReport):
            return IngestOutcome(index=index, accepted=False, report=item)
        try:
            stored = self._store_checked(item, None)
        except ValidationFailed as exc:
            return IngestOutcome(index=index, accepted=False, report=exc.report)
        except MemoryDisabled as exc:
            problem = Problem(code=exc.code, path="$.user_id", message=exc.message,
                              stage="envelope")  # fmt: skip
            report = ValidationReport(problems=(problem,))
            return IngestOutcome(index=index, accepted=False, report=report)
        return IngestOutcome(index=index, accepted=True, result=stored)

    @unconditional
    def _store_checked(self, checked: Checked, expected_version: int | None) -> IngestResult:
        obs = checked.observation
        with self._lock:
            memory = self._writable(obs.user_id)
            fact = self._new_fact(checked)
            replaced, outdated_by = self._ordered_by_time(
                fact, self._replaced_claims(memory, checked), checked
            )
            asserted: dict[str, Any] = {"fact": _dump(fact)}
            if obs.idempotency_key is not None:
                asserted["request"] = self._request_digest(obs)
            events = [self._event(EventType.FACT_ASSERTED, fact, asserted)]
            for old, reason in replaced:
                payload = {"fact_id": old.id, "by_fact_id": fact.id, "reason": reason.value}
                events.append(self._event(EventType.FACT_SUPERSEDED, old, payload))
            if outdated_by is not None:
                detail = f"observed before {outdated_by.id}, which already holds this slot"
                payload = {"fact_id": fact.id, "by_fact_id": outdated_by.id,
                           "reason": SupersedeReason.OUTDATED.value, "detail": detail}  # fmt: skip
                events.append(self._event(EventType.FACT_SUPERSEDED, fact, payload))
            events += self._session_note(memory, checked)
            events += self._freezes(obs.user_id, events)
            appended = self.store.append(
                obs.user_id,
                events,
                expected_version=memory.version if expected_version is None else expected_version,
                idempotency_key=obs.idempotency_key,
            )
            if appended.duplicate:
                first = appended.events[0]
                if first.payload.get("request", asserted["request"]) != asserted["request"]:
                    raise ValidationFailed(_mismatch(obs.idempotency_key or ""))
                return IngestResult(
                    fact_id=first.payload["fact"]["id"],
                    event_id=first.event_id,
                    seq=first.seq,
                    status=FactStatus(first.payload["fact"]["status"]),
                    duplicate=True,
                    version=appended.events[-1].version,
                )
            self._apply(obs.user_id, appended.events)
            first = appended.events[0]
            return IngestResult(
                fact_id=fact.id,
                event_id=first.event_id,
                seq=first.seq,
                status=fact.status if outdated_by is None else FactStatus.SUPERSEDED,
                superseded=tuple(old.id for old, _ in replaced),
                version=appended.events[-1].version,
            )

    def _request_digest(self, obs: Observation) -> str:
        """What a retry must repeat: the observation as sent, but its idempotency key, under
        the user's salt (erasure destroys it, so the digest says nothing afterwards)."""
        body = obs.model_dump(mode="json", exclude={"idempotency_key"})
        text = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        return hmac.new(self._salt(obs.user_id), text, hashlib.sha256).hexdigest()

    @staticmethod
    def _ordered_by_time(
        fact: Fact, claims: list[tuple[Fact, SupersedeReason]], checked: Checked
    ) -> tuple[list[tuple[Fact, SupersedeReason]], Fact | None]:
        """Split replaced claims by observation time: a late-arriving older observation does
        not overwrite a newer one; it goes to history, superseded by the newest claim.
        Claims that say they were observed at the same instant are ordered on their content
        (``_content``), never on arrival, so the same writes in any order leave the same claim
        standing; an observation that gives no time was observed as it arrived, so it is the
        newest at that instant.

        A correction (``supersedes``) names its target and applies whatever the times.
        """
        if checked.observation.supersedes is not None:
            return claims, None
        if checked.observation.observed_at is None:
            older = [(c, why) for c, why in claims if c.observed_at <= fact.observed_at]
            newer = [c for c, _ in claims if c.observed_at > fact.observed_at]
        else:
            mine = _content(fact)
            # another source's claim of the same instant is concurrent, not older: an explicit
            # change does not end it (arbitration weighs the two, as it does in any order)
            claims = [(c, why) for c, why in claims if not _concurrent(c, fact, why)]
            older = [(c, why) for c, why in claims if _content(c) <= mine]
            newer = [c for c, _ in claims if _content(c) > mine]
        return older, max(newer, key=lambda c: (_content(c), c.id), default=None)

    def _freezes(self, user_id: str, pending: Sequence[NewEvent]) -> list[NewEvent]:
        """Events a write must carry besides its own (arbitration adds the freezes of keys the
        write leaves in a strong conflict): they go in the same append as the write."""
        return []

    def _replaced_claims(
        self, memory: UserMemory, checked: Checked
    ) -> list[tuple[Fact, SupersedeReason]]:
        """Older claims this observation supersedes.

        1. ``supersedes`` names a fact: a correction of exactly that fact;
        2. ``change`` is set: an explicit change in the world ends every claim of the key
           in the same scope, whatever its source;
        3. otherwise the same source restating the key in the same scope, session and
           context replaces its own earlier claim (other sources' claims stay: they compete).
        """
        obs = checked.observation
        if obs.supersedes is not None:
            target = memory.facts.get(obs.supersedes)
            if target is None or target.key != obs.key or target.domain != obs.domain:
                raise ValidationFailed(
                    ValidationReport(
                        problems=(
                            Problem(
                                code="fact.unknown",
                                path="$.supersedes",
                                message=f"no fact {obs.supersedes} of key {obs.key} for this "
                                "user; send the id of the fact being corrected",
                                stage="envelope",
                            ),
                        )
                    )
                )
            return (
                []
                if target.status is FactStatus.SUPERSEDED
                else [(target, SupersedeReason.CORRECTION)]
            )
        found = []
        for claim in memory.live_claims(obs.domain, obs.key):
            same_slot = (claim.scope, claim.session_id, claim.context) == (
                obs.scope,
                obs.session_id,
                obs.context,
            )
            if not same_slot:
                continue
            if obs.change:
                found.append((claim, SupersedeReason.EXPLICIT_CHANGE))
            elif claim.source == obs.source:
                found.append((claim, SupersedeReason.RESTATED))
        return sorted(found, key=lambda item: item[0].id)

    def _session_note(self, memory: UserMemory, checked: Checked) -> list[NewEvent]:
        """A turn instruction also updates the session notes (long-term memory stays).

        The note replaces older notes of the key in the session whatever their source, but
        keeps the instruction's own ``change`` flag: a one-turn instruction is not a change in
        the world, and consolidation must not promote it as one.
        """
        obs = checked.observation
        if obs.scope is not Scope.TURN or obs.session_id is None:
            return []
        as_note = {"scope": Scope.SESSION, "supersedes": None, "idempotency_key": None}
        note = replace(checked, observation=obs.model_copy(update=as_note))
        sweep = replace(checked, observation=obs.model_copy(update={**as_note, "change": True}))
        fact = self._new_fact(note)
        events = [self._event(EventType.FACT_ASSERTED, fact, {"fact": _dump(fact)})]
        replaced, outdated_by = self._ordered_by_time(
            fact, self._replaced_claims(memory, sweep), sweep
        )
        for old, _ in replaced:
            payload = {"fact_id": old.id, "by_fact_id": fact.id,
                       "reason": SupersedeReason.TURN_INSTRUCTION.value}  # fmt: skip
            events.append(self._event(EventType.FACT_SUPERSEDED, old, payload))
        if outdated_by is not None:
            detail = f"observed before {outdated_by.id}, which already holds this slot"
            payload = {"fact_id": fact.id, "by_fact_id": outdated_by.id,
                       "reason": SupersedeReason.OUTDATED.value, "detail": detail}  # fmt: skip
            events.append(self._event(EventType.FACT_SUPERSEDED, fact, payload))
        return events

    def _new_fact(self, checked: Checked) -> Fact:
        obs = checked.observation
        pending = checked.kind is Kind.FACT and not self.sources.confirmed(obs.source)
        return Fact(
            id=self.clock.new_id("fact"),
            user_id=obs.user_id,
            domain=obs.domain,
            key=obs.key,
            value=checked.value,
            kind=checked.kind,
            source=obs.source,
            confidence=obs.confidence,
            scope=obs.scope,
            session_id=obs.session_id,
            observed_at=checked.observed_at,
            recorded_at=self.clock.now(),
            valid_until=checked.valid_until,
            provenance=obs.provenance,
            sensitivity=checked.sensitivity,
            status=FactStatus.PENDING_CONFIRMATION if pending else FactStatus.ACTIVE,
            schema_version=checked.spec.version,
            context=dict(obs.context),
            change=obs.change,
            supersedes=obs.supersedes,
        )

    def _event(self, kind: EventType, fact: Fact, payload: dict[str, Any]) -> NewEvent:
        return NewEvent(
            event_id=self.clock.new_id("evt"),
            type=kind,
            user_id=fact.user_id,
            domain=fact.domain,
            payload=payload,
            recorded_at=self.clock.now(),
            fact_id=fact.id,
            audit_log_id=fact.provenance.audit_log_id,
        )

    @unconditional
    def confirm(self, user_id: str, fact_id: str, *, by: str = "user") -> Event:
        """The user confirmed a ``pending_confirmation`` fact: decisions may use it now."""
        self._check_args(user_id=user_id, fact_id=fact_id, by=by)
        self._writable(user_id)
        fact = self.fact(user_id, fact_id)
        if fact.status is not FactStatus.PENDING_CONFIRMATION:
            raise InvalidOperation(
                f"fact {fact_id} is {fact.status.value}, not pending_confirmation",
                code="fact.not_pending",
            )
        return self._transition(fact, EventType.FACT_CONFIRMED, {"fact_id": fact_id, "by": by})

    @unconditional
    def retract(self, user_id: str, fact_id: str, reason: str) -> Event:
        """Forget a fact: a soft delete that keeps its history."""
        self._check_args(user_id=user_id, fact_id=fact_id, reason=reason)
        self._writable(user_id)
        fact = self.fact(user_id, fact_id)
        if fact.status in (FactStatus.RETRACTED, FactStatus.SUPERSEDED):
            raise InvalidOperation(
                f"fact {fact_id} is already {fact.status.value}", code="fact.not_live"
            )
        if not reason.strip() or len(reason) > 500:
            raise InvalidOperation("give a reason of 1-500 characters", code="fact.reason")
        payload = {"fact_id": fact_id, "reason": reason}
        return self._transition(fact, EventType.FACT_RETRACTED, payload)

    @unconditional
    def expire_due(self, user_id: str) -> list[Event]:
        """Write ``fact.expired`` for the user's facts whose ``valid_until`` has passed."""
        self._check_args(user_id=user_id)
        now = self.clock.now()
        with self._lock:
            memory = self.memory(user_id)
            due = [
                f
                for f in memory.facts.values()
                if f.valid_until is not None
                and f.valid_until <= now
                and f.status in (FactStatus.ACTIVE, FactStatus.PENDING_CONFIRMATION)
            ]
            if not due:
                return []
            events = [
                self._event(
                    EventType.FACT_EXPIRED, f, {"fact_id": f.id, "reason": "valid_until passed"}
                )
                for f in sorted(due, key=lambda f: f.id)
            ]
            appended = self.store.append(user_id, events, expected_version=memory.version)
            self._apply(user_id, appended.events)
            return list(appended.events)

    def _transition(self, fact: Fact, kind: EventType, payload: dict[str, Any]) -> Event:
        with self._lock:
            memory = self.memory(fact.user_id)
            events = [self._event(kind, fact, payload)]
            events += self._freezes(fact.user_id, events)
            appended = self.store.append(fact.user_id, events, expected_version=memory.version)
            self._apply(fact.user_id, appended.events)
            return appended.events[0]

    def erase(self, user_id: str, *, also: Sequence[Companion] = ()) -> ErasureReceipt:
        """Remove every trace of the user from every file memkg writes; return the receipt.

        Events, salts, idempotency keys and decisions go in one transaction when the decision
        log lives in the store's database (SQLite file or PostgreSQL schema); ``also`` adds
        stores kept there too (the access store: keys and audit pseudonymised), counted in
        the receipt by their first table's name. Ids merged into one person with the user
        are erased with them (``merged_ids``).
        """
        from memkg.engine.identity import erase_person

        self._check_args(user_id=user_id)
        with self._lock:
            return erase_person(self, user_id, also=also)  # type: ignore[arg-type]

    def _erase_one(self, user_id: str, *, also: Sequence[Companion] = ()) -> ErasureReceipt:
        with self._lock:
            log = self.decision_log
            joined = isinstance(log, Companion) and beside(self.store, log)
            decisions = 0 if joined else log.erase_user(user_id)
            companions: list[Companion] = (
                [log, *also] if isinstance(log, Companion) and joined else [*also]
            )
            receipt = erase_subject(self.store, user_id, self.clock, companions=companions)
            self._forget(user_id)
            files = tuple(dict.fromkeys([*receipt.files, *map(str, log.files())]))
            removed = dict(receipt.removed)
            removed["decisions"] = decisions + removed.get("decisions", 0)
            return receipt.model_copy(update={"removed": removed, "files": files})

    def erase_audit_id(self, audit_log_id: str) -> list[ErasureReceipt]:
        """Remove exactly the facts whose provenance carries ``audit_log_id``.

        Decisions citing them go first: if the purge then fails, a retry still finds the facts.
        """
        self._check_args(audit_log_id=audit_log_id)
        with self._lock:
            cited = self.store.fact_ids_with_audit_id(audit_log_id)
            decisions = {u: self.decision_log.erase_citing(u, ids) for u, ids in cited.items()}
            receipts = erase_audit_id(self.store, audit_log_id, self.clock)
            log_files = [str(p) for p in self.decision_log.files()]
            out = []
            for receipt in receipts:
                self._forget(receipt.user_id)
                removed = {**receipt.removed, "decisions": decisions.get(receipt.user_id, 0)}
                files = tuple(dict.fromkeys([*receipt.files, *log_files]))
                out.append(receipt.model_copy(update={"removed": removed, "files": files}))
            return out

    # -- reads ----------------------------------------------------------------------------

    def facts(
        self,
        user_id: str,
        domain: str | None = None,
        *,
        as_of: int | None = None,
        at: datetime | None = None,
    ) -> list[Fact]:
        """What memory holds about the user now (or as of log position ``as_of``)."""
        self._check_args(user_id=user_id, domain=domain)
        return self.memory(user_id, as_of=as_of).current(domain, at or self.clock.now())

    def fact(self, user_id: str, fact_id: str) -> Fact:
        self._check_args(user_id=user_id, fact_id=fact_id)
        fact = self.memory(user_id).facts.get(fact_id)
        if fact is None:
            raise NotFound(f"no fact {fact_id} for user {user_id}", code="fact.not_found")
        return fact

    def history(self, user_id: str, key: str, domain: str | None = None) -> list[Fact]:
        self._check_args(user_id=user_id, key=key, domain=domain)
        return self.memory(user_id).history(key, domain)

    def rebuild(self, *, progress: Callable[[int], None] | None = None) -> RebuildReport:
        """Rebuild every user's projection from the whole log, and time it.

        ``progress`` is called with the number of events applied so far, every 1,000.
        """
        start = time.perf_counter()
        _, purges = self.store.stream_mark("")  # before the fold: a purge meanwhile is seen
        memories, count = fold_all(self.store.read_all(), self._upcaster(), progress)
        with self._lock:
            for user_id in set(self._memories) | set(memories):
                self._forget(user_id)  # every layer's projections are rebuilt from here on
            # views the memory switch or a merge shape are folded on first read instead
            self._memories = {u: m for u, m in memories.items() if m.plain}
            self._purges = dict.fromkeys(self._memories, purges)
        log.info("projections rebuilt", extra={"users": len(memories), "events": count})
        return RebuildReport(
            users=len(memories),
            events=count,
            facts=sum(len(m.facts) for m in memories.values()),
            seconds=time.perf_counter() - start,
        )


def _mismatch(key: str) -> ValidationReport:
    return ValidationReport(
        problems=(
            Problem(
                code="idempotency.mismatch",
                path="$.idempotency_key",
                message=f"idempotency key {key[:64]!r} was used for a different observation; "
                "a retry must send the same body, a new observation needs a new key",
                stage="envelope",
            ),
        )
    )


def _concurrent(claim: Fact, fact: Fact, why: SupersedeReason) -> bool:
    return (
        why is SupersedeReason.EXPLICIT_CHANGE
        and claim.observed_at == fact.observed_at
        and claim.source != fact.source
    )


def _content(fact: Fact) -> tuple[datetime, bool, str, float, str, str]:
    """The order of claims for one slot: observation time, then content (an explicit change,
    the value, confidence, source, context), never the order they arrived in."""
    return (
        fact.observed_at,
        fact.change,
        canon(fact.value),
        fact.confidence,
        fact.source.value,
        canon(fact.context),
    )


def _dump(fact: Fact) -> dict[str, Any]:
    return fact.model_dump(
        mode="json", exclude={"seq", "superseded_by", "supersede_reason", "status_reason"}
    )
