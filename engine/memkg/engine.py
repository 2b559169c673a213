"""The engine: the one place that wires the stages together.

>>> from datetime import datetime, UTC
>>> from memkg.clock import FrozenClock
>>> engine = Engine(clock=FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC)))
>>> result = engine.ingest({"user_id": "u1", "domain": "travel", "key": "airline.preferred",
...                         "value": "airline:MU", "source": "dialogue", "confidence": 0.8})
>>> [(f.key, f.value, f.status.value) for f in engine.facts("u1")]
[('airline.preferred', 'airline:MU', 'active')]
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from memkg.clock import Clock, SystemClock
from memkg.config import EngineConfig
from memkg.errors import InvalidOperation, NotFound, ValidationFailed
from memkg.events.memory import MemoryEventStore
from memkg.events.projection import UserMemory
from memkg.events.store import EventStore
from memkg.graph import export, queries
from memkg.graph.cache import GraphCache
from memkg.graph.claims import EntityKeys
from memkg.graph.knowledge import Knowledge
from memkg.graph.projection import UserGraph
from memkg.graph.queries import Edge, GraphPath, RecentEntity
from memkg.graph.signals import signal_event
from memkg.graph.view import weighted_view
from memkg.lifecycle.erasure import ErasureReceipt, erase_audit_id, erase_subject
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import Fact, FactStatus, Kind, Observation, Scope, Source
from memkg.model.report import Problem, ValidationReport
from memkg.ontology import Ontology
from memkg.validate.registry import SchemaRegistry
from memkg.validate.shacl import ShaclChecker
from memkg.validate.validator import Checked, Validator

_SELF_CONFIRMED = (Source.PROFILE, Source.SYSTEM)
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


class Engine:
    """Validates, remembers and answers for one store.

    ``store`` defaults to an in-memory log; use ``Engine.open(path)`` for the SQLite default.
    """

    def __init__(
        self,
        store: EventStore | None = None,
        *,
        config: EngineConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config or EngineConfig()
        self.store: EventStore = store if store is not None else MemoryEventStore()
        self.clock: Clock = clock or SystemClock()
        self._memories: dict[str, UserMemory] = {}
        self._graphs = GraphCache(
            self.store.read_stream, self.store.stream_version, self._new_graph
        )
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: str | Path = "memkg.db", **kwargs: Any) -> Engine:
        from memkg.events.sqlite import SqliteEventStore

        return cls(SqliteEventStore(path), **kwargs)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- wiring, built on first use -------------------------------------------------------

    @cached_property
    def ontology(self) -> Ontology:
        return Ontology(self.config.ontology_dir)

    @cached_property
    def registry(self) -> SchemaRegistry:
        return SchemaRegistry(self.config.schemas_dir)

    @cached_property
    def validator(self) -> Validator:
        shacl = None
        if self.config.shacl:
            shacl = ShaclChecker(self.ontology.fact_shapes, self.ontology.entity_types)
        return Validator(self.registry, shacl, self.config.limits, self.config.state_valid_for)

    # -- writes ---------------------------------------------------------------------------

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
        return IngestOutcome(index=index, accepted=True, result=stored)

    def _store_checked(self, checked: Checked, expected_version: int | None) -> IngestResult:
        obs = checked.observation
        with self._lock:
            memory = self.memory(obs.user_id)
            replaced = self._replaced_claims(memory, checked)
            fact = self._new_fact(checked)
            events = [self._event(EventType.FACT_ASSERTED, fact, {"fact": _dump(fact)})]
            for old, reason in replaced:
                payload = {"fact_id": old.id, "by_fact_id": fact.id, "reason": reason}
                events.append(self._event(EventType.FACT_SUPERSEDED, old, payload))
            events += self._session_note(memory, checked)
            appended = self.store.append(
                obs.user_id,
                events,
                expected_version=memory.version if expected_version is None else expected_version,
                idempotency_key=obs.idempotency_key,
            )
            if appended.duplicate:
                first = appended.events[0]
                return IngestResult(
                    fact_id=first.payload["fact"]["id"],
                    event_id=first.event_id,
                    seq=first.seq,
                    status=FactStatus(first.payload["fact"]["status"]),
                    duplicate=True,
                )
            self._apply(obs.user_id, appended.events)
            self._freeze_if_contested(obs.user_id, checked)
            first = appended.events[0]
            return IngestResult(
                fact_id=fact.id,
                event_id=first.event_id,
                seq=first.seq,
                status=fact.status,
                superseded=tuple(old.id for old, _ in replaced),
            )

    def _replaced_claims(self, memory: UserMemory, checked: Checked) -> list[tuple[Fact, str]]:
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
            return [] if target.status is FactStatus.SUPERSEDED else [(target, "correction")]
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
                found.append((claim, "explicit change"))
            elif claim.source is obs.source:
                found.append((claim, "restated by the same source"))
        return sorted(found, key=lambda item: item[0].id)

    def _session_note(self, memory: UserMemory, checked: Checked) -> list[NewEvent]:
        """A turn instruction also updates the session notes (long-term memory stays)."""
        obs = checked.observation
        if obs.scope is not Scope.TURN or obs.session_id is None:
            return []
        note = replace(checked, observation=obs.model_copy(update={
            "scope": Scope.SESSION, "change": True, "supersedes": None, "idempotency_key": None}))
        fact = self._new_fact(note)
        events = [self._event(EventType.FACT_ASSERTED, fact, {"fact": _dump(fact)})]
        for old, reason in self._replaced_claims(memory, note):
            payload = {"fact_id": old.id, "by_fact_id": fact.id, "reason": reason}
            events.append(self._event(EventType.FACT_SUPERSEDED, old, payload))
        return events

    def _new_fact(self, checked: Checked) -> Fact:
        obs = checked.observation
        pending = checked.kind is Kind.FACT and obs.source not in _SELF_CONFIRMED
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

    def confirm(self, user_id: str, fact_id: str, *, by: str = "user") -> Event:
        """The user confirmed a ``pending_confirmation`` fact: decisions may use it now."""
        fact = self.fact(user_id, fact_id)
        if fact.status is not FactStatus.PENDING_CONFIRMATION:
            raise InvalidOperation(
                f"fact {fact_id} is {fact.status.value}, not pending_confirmation",
                code="fact.not_pending",
            )
        return self._transition(fact, EventType.FACT_CONFIRMED, {"fact_id": fact_id, "by": by})

    def retract(self, user_id: str, fact_id: str, reason: str) -> Event:
        """Forget a fact: a soft delete that keeps its history."""
        fact = self.fact(user_id, fact_id)
        if fact.status in (FactStatus.RETRACTED, FactStatus.SUPERSEDED):
            raise InvalidOperation(
                f"fact {fact_id} is already {fact.status.value}", code="fact.not_live"
            )
        if not reason.strip() or len(reason) > 500:
            raise InvalidOperation("give a reason of 1-500 characters", code="fact.reason")
        payload = {"fact_id": fact_id, "reason": reason}
        return self._transition(fact, EventType.FACT_RETRACTED, payload)

    def expire_due(self, user_id: str) -> list[Event]:
        """Write ``fact.expired`` for the user's facts whose ``valid_until`` has passed."""
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
            appended = self.store.append(
                fact.user_id, [self._event(kind, fact, payload)], expected_version=memory.version
            )
            self._apply(fact.user_id, appended.events)
            return appended.events[0]

    def erase(self, user_id: str) -> ErasureReceipt:
        """Remove every trace of the user from every file memkg writes; return the receipt."""
        with self._lock:
            receipt = erase_subject(self.store, user_id, self.clock)
            self._memories.pop(user_id, None)
            self._graphs.forget(user_id)
            return receipt

    def erase_audit_id(self, audit_log_id: str) -> list[ErasureReceipt]:
        """Remove exactly the facts whose provenance carries ``audit_log_id``."""
        with self._lock:
            receipts = erase_audit_id(self.store, audit_log_id, self.clock)
            for receipt in receipts:
                self._memories.pop(receipt.user_id, None)
                self._graphs.forget(receipt.user_id)
            return receipts

    # -- reads ----------------------------------------------------------------------------

    def memory(self, user_id: str, *, as_of: int | None = None) -> UserMemory:
        """The user's projection, rebuilt from the log when stale (or as of ``as_of``)."""
        if as_of is not None:
            return UserMemory.from_events(user_id, self.store.read_stream(user_id, up_to_seq=as_of))
        with self._lock:
            cached = self._memories.get(user_id)
            if cached is None or cached.version != self.store.stream_version(user_id):
                cached = UserMemory.from_events(user_id, self.store.read_stream(user_id))
                self._memories[user_id] = cached
            return cached

    def facts(
        self,
        user_id: str,
        domain: str | None = None,
        *,
        as_of: int | None = None,
        at: datetime | None = None,
    ) -> list[Fact]:
        """What memory holds about the user now (or as of log position ``as_of``)."""
        return self.memory(user_id, as_of=as_of).current(domain, at or self.clock.now())

    def fact(self, user_id: str, fact_id: str) -> Fact:
        fact = self.memory(user_id).facts.get(fact_id)
        if fact is None:
            raise NotFound(f"no fact {fact_id} for user {user_id}", code="fact.not_found")
        return fact

    def history(self, user_id: str, key: str, domain: str | None = None) -> list[Fact]:
        return self.memory(user_id).history(key, domain)

    def rebuild(self) -> RebuildReport:
        """Rebuild every user's projection from the whole log, and time it."""
        start = time.perf_counter()
        memories: dict[str, UserMemory] = {}
        count = 0
        for event in self.store.read_all():
            memory = memories.get(event.user_id)
            if memory is None:
                memory = memories[event.user_id] = UserMemory(event.user_id)
            memory.apply(event)
            count += 1
        with self._lock:
            self._memories = memories
        return RebuildReport(
            users=len(memories),
            events=count,
            facts=sum(len(m.facts) for m in memories.values()),
            seconds=time.perf_counter() - start,
        )

    def _apply(self, user_id: str, events: Sequence[Event]) -> None:
        self._graphs.apply(user_id, events)
        memory = self._memories.get(user_id)
        if memory is None:
            return
        for event in events:
            memory.apply(event)

    # -- the contextual graph (logic in memkg.graph) ------------------------------------

    @cached_property
    def knowledge(self) -> Knowledge:
        return Knowledge(self.ontology.knowledge)

    @cached_property
    def entity_keys(self) -> EntityKeys:
        """(domain, key) → entity class, for every key whose schema declares one."""
        specs = (self.registry.spec(d, k) for d in self.registry.domains()
                 for k in self.registry.keys(d))  # fmt: skip
        return {(s.domain, s.key): s.entity for s in specs if s is not None and s.entity}

    def _new_graph(self, user_id: str) -> UserGraph:
        return UserGraph(UserMemory(user_id), self.knowledge, self.entity_keys)

    def signal(
        self, user_id: str, domain: str, key: str, value: Any, kind: str,
        *, session_id: str | None = None,
    ) -> Event:  # fmt: skip
        """Record that the user mentioned, corrected, ignored or rejected ``key → value``."""
        with self._lock:
            memory = self.memory(user_id)
            event = signal_event(
                user_id=user_id, domain=domain, key=key, value=value, kind=kind,
                session_id=session_id, live_facts=memory.current(domain, self.clock.now()),
                entity_keys=self.entity_keys, event_id=self.clock.new_id("evt"),
                now=self.clock.now(),
            )  # fmt: skip
            appended = self.store.append(user_id, [event], expected_version=memory.version)
            self._apply(user_id, appended.events)
            return appended.events[0]

    def graph(
        self, user_id: str, domain: str | None = None, *, as_of: int | None = None,
        fmt: str = "json",
    ) -> dict[str, Any] | str:  # fmt: skip
        """The user's graph (of one domain, or all) with weights: JSON data or Turtle text."""
        if as_of is None:
            graph, view = self._graphs.view(user_id, self.clock.now(), self.config.weights, domain)
        else:
            graph = self._graphs.as_of(user_id, seq=as_of)
            view = weighted_view(graph, self.clock.now(), self.config.weights, domain)
        return export.to_turtle(graph, view) if fmt == "turtle" else export.to_json(graph, view)

    def edges(
        self, user_id: str, domain: str, relation: str | None = None,
        min_weight: float | None = None, *, decidable_only: bool = False,
    ) -> list[Edge]:  # fmt: skip
        """The user's claims in ``domain``, heaviest first, each with its weight breakdown."""
        _, view = self._graphs.view(user_id, self.clock.now(), self.config.weights, domain)
        return queries.edges(view, relation, min_weight, decidable_only=decidable_only)

    def paths(
        self, user_id: str, concept: str, *, domain: str | None = None, max_depth: int = 3,
        decidable_only: bool = False,
    ) -> list[GraphPath]:  # fmt: skip
        """Paths from the user to ``concept`` (``protocol:immediate_hospital_visit``)."""
        _, view = self._graphs.view(user_id, self.clock.now(), self.config.weights, domain)
        return queries.paths(view, concept, max_depth, decidable_only=decidable_only)

    def recent_entities(
        self, user_id: str, entity_type: str, session_id: str, *, domain: str | None = None,
        limit: int = 10,
    ) -> list[RecentEntity]:  # fmt: skip
        """Entities of a type seen in the session, most recent first."""
        graph = self._graphs.get(user_id)
        return queries.recent_entities(graph, entity_type, session_id, domain=domain, limit=limit)

    def holding(self, user_id: str, at: datetime, domain: str | None = None) -> list[Edge]:
        """The claims that held at ``at``, as memory stood then, weighted as of then."""
        graph = self._graphs.as_of(user_id, at=at)
        return queries.edges(weighted_view(graph, at, self.config.weights, domain))

    def _salt(self, user_id: str) -> bytes:
        return self.store.subject_salt(user_id)


def _dump(fact: Fact) -> dict[str, Any]:
    return fact.model_dump(mode="json", exclude={"seq", "superseded_by", "status_reason"})
