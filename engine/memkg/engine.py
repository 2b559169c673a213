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
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict
from rdflib import RDFS

from memkg.arbitration import (
    MemoryReader,
    Outcome,
    QuestionBook,
    Resolution,
    Review,
    ReviewStatus,
    RoleDefaults,
    Standing,
    hour_patterns,
    is_hours_key,
    labels_from,
    load_policy,
)
from memkg.arbitration.claims import SignalLookup
from memkg.arbitration.review import frozen_payload, reviews_from
from memkg.arbitration.support import canon
from memkg.clock import Clock, SystemClock
from memkg.config import EngineConfig
from memkg.decisions.log import DecisionLog, MemoryDecisionLog
from memkg.errors import ConcurrencyConflict, InvalidOperation, NotFound, ValidationFailed
from memkg.events.memory import MemoryEventStore
from memkg.events.projection import UserMemory
from memkg.events.store import EventStore
from memkg.evolution.dry_run import DryRunReport
from memkg.evolution.history import schema_history
from memkg.evolution.migration import MigrationPlan, load_plan
from memkg.evolution.upcast import Upcasters
from memkg.graph import export, queries
from memkg.graph.cache import GraphCache
from memkg.graph.claims import EntityKeys
from memkg.graph.knowledge import Knowledge
from memkg.graph.projection import UserGraph
from memkg.graph.queries import Edge, GraphPath, RecentEntity
from memkg.graph.signals import signal_event
from memkg.graph.view import weighted_view
from memkg.graph.weights import Signal, claim_weight
from memkg.intent import IntentLayer, ReplayReport, RulesRefused
from memkg.intent_cases import run_rule_cases
from memkg.lifecycle import consolidate as consolidation
from memkg.lifecycle import distill, extract, inject, recall
from memkg.lifecycle.entities import EntityIndex
from memkg.lifecycle.erasure import ErasureReceipt, erase_audit_id, erase_subject
from memkg.lifecycle.note_tool import parse_arguments, save_memory_note_tool
from memkg.lifecycle.notes import Note, NoteBook
from memkg.lifecycle.prune import Window
from memkg.lifecycle.tokens import TokenCounter, default_counter
from memkg.llm.port import LLM, Message, Tool
from memkg.migrations import ApplyReport
from memkg.migrations import apply as apply_plan
from memkg.migrations import dry_run as dry_run_plan
from memkg.model.decision import Decision
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import Fact, FactStatus, Kind, Observation, Scope, Source
from memkg.model.report import Problem, ValidationReport
from memkg.ontology import Ontology
from memkg.rules.cases import CasesReport
from memkg.validate.guards import hash_pii, text_problems
from memkg.validate.limits import check_value
from memkg.validate.registry import KeySpec, SchemaRegistry
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
        llm: LLM | None = None,
        decision_log: DecisionLog | None = None,
    ) -> None:
        self.config = config or EngineConfig()
        self.decision_log: DecisionLog = decision_log or MemoryDecisionLog()
        self._llm, self._owns_llm = llm, False
        self._executor: ThreadPoolExecutor | None = None
        self.store: EventStore = store if store is not None else MemoryEventStore()
        self.clock: Clock = clock or SystemClock()
        self._memories: dict[str, UserMemory] = {}
        self._graphs = GraphCache(
            self.store.read_stream, self.store.stream_version, self._new_graph
        )
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: str | Path = "memkg.db", **kwargs: Any) -> Engine:
        from memkg.decisions.sqlite import SqliteDecisionLog
        from memkg.events.sqlite import SqliteEventStore

        store = SqliteEventStore(path)
        kwargs.setdefault("decision_log", SqliteDecisionLog(path))
        return cls(store, **kwargs)

    def close(self) -> None:
        """Wait for background consolidations, then close the store (and a model it built)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        if self._owns_llm and self._llm is not None:
            self._llm.close()
        self.decision_log.close()
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
        as_note = {"scope": Scope.SESSION, "change": True, "supersedes": None,
                   "idempotency_key": None}  # fmt: skip
        note = replace(checked, observation=obs.model_copy(update=as_note))
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
            decisions = self.decision_log.erase_user(user_id)
            receipt = erase_subject(self.store, user_id, self.clock)
            self._memories.pop(user_id, None)
            self._graphs.forget(user_id)
            files = tuple(dict.fromkeys([*receipt.files, *map(str, self.decision_log.files())]))
            removed = {**receipt.removed, "decisions": decisions}
            return receipt.model_copy(update={"removed": removed, "files": files})

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
                cached = UserMemory.from_events(
                    user_id, self.store.read_stream(user_id), self.upcasters.upcast
                )
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

    def user_graph(self, user_id: str, *, as_of: int | None = None) -> UserGraph:
        """The user's contextual graph: facts, signals and RDF dataset (treat as read-only)."""
        return self._graphs.get(user_id) if as_of is None else self._graphs.as_of(user_id, seq=as_of)

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

    # -- arbitration: which memory holds (logic in memkg.arbitration) ---------------------

    @cached_property
    def reader(self) -> MemoryReader:
        """The arbitration policy, questions and role defaults under ``rules/``."""
        rules = self.config.rules_dir
        labels = self.ontology.knowledge.subject_objects(RDFS.label)
        return MemoryReader(
            policy=load_policy(rules / "policy.yaml"),
            questions=QuestionBook.load(rules),
            defaults=RoleDefaults.load(rules, self.registry.spec),
            weights=self.config.weights,
            labels=labels_from((str(s), str(o), getattr(o, "language", None)) for s, o in labels),
        )

    def resolve(
        self, user_id: str, domain: str, key: str, *, session_id: str | None = None,
        turn: str | None = None, context: Mapping[str, str] | None = None,
        language: str | None = None,
    ) -> Resolution:  # fmt: skip
        """Which value of ``key`` holds now, with the arbitration record.

        ``session_id`` and ``turn`` (the turn's ``source_ref``) bring session notes and this
        turn's instruction in; a newly frozen key is put on the review queue.
        """
        spec = self._key_spec(domain, key)
        with self._lock:
            graph = self._graphs.get(user_id)
            resolution = self.reader.resolve_key(
                list(graph.memory.facts.values()), self._edge_signals(graph),
                self._reviews(user_id, graph.seq), spec, self.clock.now(), user_id=user_id,
                session_id=session_id, turn=turn, context=context, language=language,
            )  # fmt: skip
            return self._queue_frozen(resolution)

    def resolved_facts(
        self, user_id: str, domain: str, *, session_id: str | None = None,
        turn: str | None = None, language: str | None = None,
    ) -> list[Resolution]:  # fmt: skip
        """What reads and decisions use: every key slot's resolved value with its record."""
        specs = [s for k in self.registry.keys(domain) if (s := self.registry.spec(domain, k))]
        with self._lock:
            graph = self._graphs.get(user_id)
            found = self.reader.resolve_domain(
                list(graph.memory.facts.values()), self._edge_signals(graph),
                self._reviews(user_id, graph.seq), specs, self.clock.now(), user_id=user_id,
                session_id=session_id, turn=turn, language=language,
            )  # fmt: skip
            return [self._queue_frozen(r) for r in found]

    def review_queue(self, *, include_resolved: bool = False) -> list[Review]:
        """Frozen keys waiting for a reviewer, oldest first (reads the whole log)."""
        reviews = reviews_from(self.store.read_all()).values()
        found = [r for r in reviews if include_resolved or r.status is ReviewStatus.OPEN]
        return sorted(found, key=lambda r: (r.opened_at, r.review_id))

    def resolve_review(
        self, review_id: str, value: Any, note: str, reviewer: str = "reviewer"
    ) -> Review:
        """Settle a frozen key with ``value``: an event naming the reviewer; the key unfreezes."""
        review = next((r for r in self.review_queue(include_resolved=True)
                       if r.review_id == review_id), None)  # fmt: skip
        if review is None:
            raise NotFound(f"no review {review_id}", code="review.not_found")
        if review.status is not ReviewStatus.OPEN:
            raise InvalidOperation(f"review {review_id} is already resolved", code="review.closed")
        if not note.strip() or len(note) > 500 or not reviewer.strip() or len(reviewer) > 128:
            raise InvalidOperation("give a note of 1-500 characters and the reviewer's name",
                                   code="review.note")  # fmt: skip
        spec = self._key_spec(review.domain, review.key)
        problems = tuple(
            Problem(code=f"schema.{e.validator}", path="$.value", message=e.message, stage="schema")
            for e in spec.validator.iter_errors(value)
        )
        if problems:
            raise ValidationFailed(ValidationReport(problems=problems))
        if spec.hashed_paths:
            value = hash_pii(value, spec.hashed_paths, self._salt(review.user_id))
        payload = {"review_id": review_id, "key": review.key, "context": review.context,
                   "value": value, "note": note, "reviewer": reviewer}  # fmt: skip
        with self._lock:
            self._append_plain(review.user_id, review.domain, EventType.REVIEW_RESOLVED, payload)
        return review.model_copy(update={"status": ReviewStatus.RESOLVED, "value": value,
                                         "note": note, "reviewer": reviewer,
                                         "resolved_at": self.clock.now()})  # fmt: skip

    def derive_patterns(self, user_id: str, domain: str, *, tz: str = "UTC") -> list[IngestResult]:
        """Write ``pattern`` facts the user's behaviour shows ("usually shops 20:00-22:00")."""
        zone = ZoneInfo(tz)
        facts = list(self.memory(user_id).facts.values())
        written = []
        for key in self.registry.keys(domain):
            spec = self.registry.spec(domain, key)
            if spec is None or not is_hours_key(spec):
                continue
            for obs in hour_patterns(facts, spec, user_id=user_id, tz=zone, now=self.clock.now()):
                held = [f for f in self.memory(user_id).live_claims(domain, key)
                        if f.source is Source.SYSTEM and f.context == obs.context]  # fmt: skip
                if not any(canon(f.value) == canon(obs.value) for f in held):
                    written.append(self.ingest(obs))
        return written

    # -- lifecycle: what agents do with memory (logic in memkg.lifecycle) ----------------

    @property
    def llm(self) -> LLM | None:
        """The model: the one given, else an adapter built from ``config.llm`` on first use."""
        with self._lock:
            if self._llm is None and self.config.llm is not None:
                from memkg.llm.openai_adapter import OpenAIChat

                self._llm, self._owns_llm = OpenAIChat(self.config.llm), True
            return self._llm

    def check_text(self, text: str, path: str = "$.note") -> list[Problem]:
        """The fact guards on free text: limits, identifiers, credentials, injection."""
        return [*check_value(text, self.config.limits), *text_problems(text, (), prefix=path)]

    def declared_keys(self, domain: str) -> list[str]:
        return self.registry.keys(domain)

    def key_schema(self, domain: str, key: str) -> dict[str, Any] | None:
        spec = self.registry.spec(domain, key)
        return None if spec is None else spec.schema

    def read_events(self, user_id: str) -> list[Event]:
        return self.store.read_stream(user_id)

    def append_events(
        self, user_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> list[Event]:
        """Append ``events`` atomically (after ``expected_version``, default: the current)."""
        with self._lock:
            version = self.memory(user_id).version if expected_version is None else expected_version
            appended = self.store.append(user_id, events, expected_version=version)
            self._apply(user_id, appended.events)
            return list(appended.events)

    def notes(self, user_id: str, domain: str | None = None) -> list[Note]:
        """The user's live free-text notes, oldest first."""
        return NoteBook.from_events(self.read_events(user_id)).live(domain, self.clock.now())

    def note_tool(self, domain: str) -> Tool:
        """``save_memory_note`` as a tool definition (``.to_openai()`` for a request)."""
        return save_memory_note_tool(self.registry.keys(domain))

    def save_memory_note(
        self, user_id: str, domain: str, note: str, scope: str = "session",
        key: str | None = None, value: Any = None, **where: Any,
    ) -> distill.NoteResult:  # fmt: skip
        """Guard and store a note; ``where``: session_id, source_ref, provenance, tool_outputs."""
        return distill.save_memory_note(
            self, self.config.lifecycle, user_id=user_id, domain=domain, note=note, scope=scope,
            key=key, value=value, **where,
        )  # fmt: skip

    def handle_note_call(
        self, user_id: str, domain: str, arguments: str | Mapping[str, Any], **where: Any
    ) -> distill.NoteResult:
        """Run a model's ``save_memory_note`` call (its raw JSON arguments)."""
        args = parse_arguments(arguments if isinstance(arguments, str) else dict(arguments))
        if isinstance(args, distill.NoteResult):
            return args
        return self.save_memory_note(user_id, domain, **args, **where)

    def prune(self, window: Window, keep_turns: int | None = None) -> Window:
        """``window`` cut to the configured last turns plus a summary (notes always kept)."""
        life = self.config.lifecycle
        return window.prune(keep_turns or life.window_turns,
                            max_summary_chars=life.summary_max_chars)  # fmt: skip

    def render_profile(
        self, user_id: str, domain: str, budget: int | None = None, *,
        session_id: str | None = None, language: str | None = None,
    ) -> inject.Profile:  # fmt: skip
        """The memory block for a system prompt: resolved facts, notes, conflicts, stale items."""
        now, params = self.clock.now(), self.config.weights
        resolved = self.resolved_facts(user_id, domain, session_id=session_id, language=language)
        facts = [item for r in resolved if (item := _profile_fact(r)) is not None]
        notes = [
            (n, claim_weight(n.confidence, n.source.value, n.observed_at, [], now, params).value)
            for n in self.notes(user_id, domain)
            if n.scope is Scope.GLOBAL or n.session_id == session_id
        ]
        count, name = self._token_counter
        return inject.render_profile(
            user_id, domain, facts, notes, now=now,
            budget=budget or self.config.lifecycle.profile_budget, counter=count, counter_name=name,
        )  # fmt: skip

    def extract(
        self, user_id: str, domain: str, dialogue: Sequence[Message], **options: Any
    ) -> extract.ExtractionReport:
        """Ask the model for candidate facts in ``dialogue`` and store those that validate.

        ``options``: session_id, provenance, write (False: validate only).
        """
        llm = self.llm
        if llm is None:
            raise InvalidOperation("extraction needs a model: set EngineConfig.llm",
                                   code="llm.not_configured")  # fmt: skip
        return extract.extract(self, llm, self.config.lifecycle, dialogue, user_id=user_id,
                               domain=domain, **options)  # fmt: skip

    def consolidate(
        self, user_id: str, domain: str, session_id: str
    ) -> consolidation.ConsolidationHandle:
        """Merge a finished session into long-term memory in the background (one at a time)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="memkg-consolidate")
            future = self._executor.submit(
                lambda: consolidation.consolidate(
                    self, self.llm, self.config.lifecycle, user_id=user_id, domain=domain,
                    session_id=session_id,
                )
            )  # fmt: skip
        return consolidation.ConsolidationHandle(future)

    def recall(
        self, user_id: str, query: str, k: int = 5, *, domain: str | None = None
    ) -> recall.RecallResult:
        """The ``k`` memories most useful for ``query``, with the full ranking trace."""
        return recall.recall(
            query, self.facts(user_id, domain), self.notes(user_id, domain), k=k,
            now=self.clock.now(), weights=self.config.lifecycle.recall,
            credibility=self.config.weights.credibility, index=self._entity_index,
        )  # fmt: skip

    @cached_property
    def _entity_index(self) -> EntityIndex:
        return EntityIndex.from_graph(self.ontology.knowledge)

    @cached_property
    def _token_counter(self) -> tuple[TokenCounter, str]:
        return default_counter()

    def _key_spec(self, domain: str, key: str) -> KeySpec:
        spec = self.registry.spec(domain, key)
        if spec is None:
            raise NotFound(f"key {key!r} is not declared in schemas/{domain}", code="key.unknown")
        return spec

    def _edge_signals(self, graph: UserGraph) -> SignalLookup:
        """A claim's signals: those on its edge in the contextual graph."""

        def lookup(fact: Fact) -> list[Signal]:
            found = {s.event_id: s for t in graph.targets(fact) for s in graph.signals_for(fact, t)}
            return [s.as_signal() for _, s in sorted(found.items())]

        return lookup

    def _reviews(self, user_id: str, seq: int) -> list[Review]:
        cached = self._review_cache.get(user_id)
        if cached is None or cached[0] != seq:
            cached = (seq, list(reviews_from(self.store.read_stream(user_id)).values()))
            self._review_cache[user_id] = cached
        return cached[1]

    @cached_property
    def _review_cache(self) -> dict[str, tuple[int, list[Review]]]:
        return {}

    def _queue_frozen(self, resolution: Resolution) -> Resolution:
        if resolution.outcome is not Outcome.FROZEN or resolution.review_id is not None:
            return resolution
        review_id = self.clock.new_id("review")
        payload = frozen_payload(review_id, resolution)
        self._append_plain(resolution.user_id, resolution.domain, EventType.KEY_FROZEN, payload)
        return resolution.model_copy(update={"review_id": review_id})

    def _freeze_if_contested(self, user_id: str, checked: Checked) -> None:
        """Two long-term values of a key at once: arbitrate now, so a strong conflict is queued."""
        obs = checked.observation
        if obs.scope is not Scope.GLOBAL or checked.spec.multi:
            return
        live = self.memory(user_id).live_claims(obs.domain, obs.key)
        values = {canon(f.value) for f in live
                  if f.status is FactStatus.ACTIVE and f.scope is Scope.GLOBAL}  # fmt: skip
        if len(values) > 1:
            try:
                self.resolve(user_id, obs.domain, obs.key, context=obs.context)
            except ConcurrencyConflict:
                pass  # the fact is stored; the next read of the key queues the freeze

    def _append_plain(
        self, user_id: str, domain: str, kind: EventType, payload: dict[str, Any]
    ) -> Event:
        """Append one event that is about a key, not a fact."""
        memory = self.memory(user_id)
        event = NewEvent(event_id=self.clock.new_id("evt"), type=kind, user_id=user_id,
                         domain=domain, payload=payload, recorded_at=self.clock.now())  # fmt: skip
        appended = self.store.append(user_id, [event], expected_version=memory.version)
        self._apply(user_id, appended.events)
        return appended.events[0]

    def _salt(self, user_id: str) -> bytes:
        return self.store.subject_salt(user_id)

    # -- decisions (logic in memkg.rules, arbitration.hit_policy, explain, decisions) -------

    @cached_property
    def intent(self) -> IntentLayer:
        """Rule bundle, decisions and their log; rules are linted on first use."""
        return IntentLayer(self, self.decision_log)

    def decide(
        self, user_id: str, domain: str, context: Mapping[str, Any] | None = None,
        *, decision: str | None = None,
    ) -> Decision:  # fmt: skip
        """What the agent should do for the user now, with the reason; logged for replay."""
        return self.intent.decide(user_id, domain, context, decision)

    def explain(self, decision_id: str, fmt: str = "text") -> str:
        """A logged decision's explanation as ``text``, ``md`` or ``json``."""
        return self.intent.explain(decision_id, fmt)

    def replay(self, decision_id: str) -> ReplayReport:
        """Re-make a logged decision as of its log position, clock and rules; compare."""
        return self.intent.replay(decision_id)

    def decisions(self, user_id: str, *, limit: int | None = None) -> list[Decision]:
        return self.decision_log.for_user(user_id, limit=limit)

    def reload_rules(self, path: str | Path | None = None) -> CasesReport:
        """Lint, compile and test a rule bundle, then swap it in; refuse it if anything fails."""
        folder = Path(path) if path is not None else self.config.rules_dir
        rules = self.intent.load(folder)
        report = run_rule_cases(self.intent, rules, folder)
        if not report.passed:
            failures = [f"{r.case.file}:{r.case.line} {r.case.name}: {'; '.join(r.failures)}"
                        for r in report.results if not r.passed]  # fmt: skip
            raise RulesRefused(f"rule cases failed ({len(failures)} case(s), "
                               f"{len(report.findings)} problem(s)); the rules in use stay",
                               report.findings, failures)  # fmt: skip
        self.intent.swap(rules)
        return report

    # -- schema evolution (logic in memkg.evolution, wired in memkg.migrations) -------------

    def schema_history(self, domain: str, key: str | None = None) -> dict[str, Any]:
        """Every version of the domain's key groups (or of one key) under ``schemas/``."""
        return schema_history(self.config.root, domain, key)

    def migration_dry_run(
        self, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
        waiver: str | Path | None = None, decisions: int = 20,
    ) -> DryRunReport:  # fmt: skip
        """What ``plan`` would do to every user's facts, the rules and recent decisions."""
        return dry_run_plan(self, plan, rules=rules, waiver=waiver, decisions=decisions)

    def apply_migration(
        self, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
        waiver: str | Path | None = None,
    ) -> ApplyReport:  # fmt: skip
        """Apply a plan whose dry run does not BLOCK; rerun it to resume after a crash."""
        return apply_plan(self, plan, rules=rules, waiver=waiver)

    @cached_property
    def upcasters(self) -> Upcasters:
        """Upcasters of the plans under ``schemas/<domain>/migrations/`` (and applied ones)."""
        found = Upcasters()
        for path in sorted(self.config.schemas_dir.glob("*/migrations/*.yaml")):
            plan = load_plan(path, self.config.root)
            old = self.registry.group(plan.domain, plan.group, plan.from_version)
            new = self.registry.group(plan.domain, plan.to_group, plan.to_version)
            found.register(plan, old, new)
        return found


def _dump(fact: Fact) -> dict[str, Any]:
    return fact.model_dump(mode="json", exclude={"seq", "superseded_by", "status_reason"})


_OUTCOMES = {Outcome.ADOPTED: "adopted", Outcome.DEFAULT: "adopted",
             Outcome.PROVISIONAL: "provisional", Outcome.FROZEN: "frozen"}  # fmt: skip


def _profile_fact(resolution: Resolution) -> inject.ResolvedFact | None:
    """What the profile shows of a resolution: the held value, its evidence, what is open."""
    outcome = _OUTCOMES.get(resolution.outcome)
    if outcome is None:
        return None
    won = [c for c in resolution.claims if c.standing is Standing.WON]
    best = max(won, key=lambda c: (c.score, c.fact_id)) if won else None
    held = canon(resolution.value)
    stale = [f for f in resolution.stale if best is not None and f.fact_id == best.fact_id]
    return inject.ResolvedFact(
        key=resolution.key, value=resolution.value, outcome=outcome,
        kind=best.kind.value if best else "preference",
        source=best.source.value if best else "default",
        observed_at=best.observed_at if best else None,
        weight=min(max((s.support for s in resolution.support), default=0.5), 1.0),
        context=resolution.context,
        question=resolution.question.text if resolution.question else None,
        competing=tuple({canon(c.value): c.value for c in resolution.claims
                         if outcome == "frozen" or canon(c.value) != held}.values()),
        stale="; ".join(f.detail for f in stale) or None,
        stale_claims=tuple(f"{f.source.value} still says {inject.quote(f.value)}: {f.detail}"
                           for f in resolution.stale if f not in stale),
    )  # fmt: skip
