"""The engine's foundation: configuration, store, clock, and the user's current memory.

Each stage the engine wires is a layer on top of the one before (``facts`` → ``graph`` →
``arbitration`` → ``decisions`` → ``lifecycle`` → ``evolution``), in pipeline order: a layer
may use everything below it, and extends the hooks ``_apply`` (new events), ``_forget`` (an
erased user) and ``close``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, Self

from memkg.arbitration.policy import PolicyFile, load_policy
from memkg.clock import Clock, SystemClock
from memkg.config import EngineConfig
from memkg.decisions.log import DecisionLog, MemoryDecisionLog
from memkg.errors import MemoryDisabled, NotFound
from memkg.events.memory import MemoryEventStore
from memkg.events.projection import UserMemory
from memkg.events.retry import Attempts
from memkg.events.store import EventStore
from memkg.identity import view
from memkg.llm.port import LLM
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import Fact
from memkg.model.keyspec import KeySpec
from memkg.model.source import Sources
from memkg.model.weight import WeightParams
from memkg.ontology import Ontology
from memkg.roots import Roots
from memkg.validate.limits import check_text
from memkg.validate.registry import SchemaRegistry
from memkg.validate.shacl import ShaclChecker
from memkg.validate.validator import Validator


class EngineBase:
    """State every layer shares; see ``memkg.Engine`` for the whole."""

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
        if store is None and self.config.db is not None:
            store, decision_log = _open_db(self.config, decision_log)
        self.store: EventStore = store if store is not None else MemoryEventStore()
        self.clock: Clock = clock or SystemClock()
        if decision_log is None:
            decision_log = self._decision_log_beside(self.store)
        self.decision_log: DecisionLog = decision_log
        self._llm, self._owns_llm = llm, False
        self._memories: dict[str, UserMemory] = {}
        self._purges: dict[str, int] = {}
        """The store's purge count each cached projection was read at."""
        self._joined_by: dict[str, set[str]] = {}
        """user → the users whose cached views join that user's events (merged ids)."""
        self._lock = threading.RLock()
        self.conflicts = Attempts()
        """Conflicts unconditional writes met: ``retried`` internally, ``surfaced`` to callers."""

    @classmethod
    def open(cls, path: str | Path = "memkg.db", **kwargs: Any) -> Self:
        """An engine on the embedded default: one SQLite file for events and decisions.

        ``":memory:"`` gives the in-memory store and decision log: nothing outlives the engine;
        a ``postgresql://`` URL is ``Engine.connect(path)``.
        """
        from memkg.decisions.sqlite import SqliteDecisionLog
        from memkg.events.sqlite import SqliteEventStore

        if str(path) == ":memory:":
            return cls(**kwargs)
        if is_postgres_url(str(path)):
            return cls.connect(str(path), **kwargs)

        store = SqliteEventStore(path)
        if "decision_log" not in kwargs:
            kwargs["decision_log"] = SqliteDecisionLog(path)
        return cls(store, **kwargs)

    @classmethod
    def connect(cls, dsn: str, *, schema: str | None = None, **kwargs: Any) -> Self:
        """An engine on PostgreSQL, for several engine processes sharing one memory.

        ``schema`` defaults to ``config.pg_schema`` (``memkg``).
        """
        from memkg.events.postgres import PostgresEventStore

        config = kwargs.get("config") or EngineConfig()
        store = PostgresEventStore(
            dsn, schema=schema or config.pg_schema, vacuum=config.erase_vacuum
        )
        return cls(store, **kwargs)

    @staticmethod
    def _decision_log_beside(store: EventStore) -> DecisionLog:
        """Decisions live where the events do (in memory for the in-memory store)."""
        from memkg.events.postgres import PostgresEventStore

        if isinstance(store, PostgresEventStore):
            from memkg.decisions.postgres import PostgresDecisionLog

            return PostgresDecisionLog(store.dsn, schema=store.schema)
        return MemoryDecisionLog()

    def close(self) -> None:
        """Close the decision log and the store."""
        self.decision_log.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- wiring, built on first use -------------------------------------------------------

    @cached_property
    def layers(self) -> Roots:
        """The roots this engine reads schemas, rules and ontology from (``memkg.roots``)."""
        return self.config.layers

    @cached_property
    def ontology(self) -> Ontology:
        return Ontology(self.layers)

    @cached_property
    def registry(self) -> SchemaRegistry:
        return SchemaRegistry(self.layers.schema_dirs())

    @cached_property
    def policy(self) -> PolicyFile:
        """``rules/policy.yaml`` of the last root that has one (``memkg.arbitration.policy``)."""
        found = self.layers.file("rules/policy.yaml")
        return load_policy(found or self.layers.paths[0] / "rules" / "policy.yaml")

    @cached_property
    def sources(self) -> Sources:
        """The sources in force: the built-ins and those the policy declares."""
        return self.policy.in_force()

    @cached_property
    def weights(self) -> WeightParams:
        """``EngineConfig.weights`` with the credibility of every source the roots declare."""
        declared = {name: d.credibility for name, d in self.sources.declared.items()}
        if not declared:
            return self.config.weights
        merged = {**self.config.weights.credibility, **declared}
        return self.config.weights.model_copy(update={"credibility": merged})

    @cached_property
    def validator(self) -> Validator:
        shacl = None
        if self.config.shacl:
            shacl = ShaclChecker(self.ontology.fact_shapes, self.ontology.entity_types,
                                 sources=self.sources.names)  # fmt: skip
        return Validator(self.registry, shacl, self.config.limits, self.config.state_valid_for,
                         self.sources)  # fmt: skip

    def memory(self, user_id: str, *, as_of: int | None = None) -> UserMemory:
        """The user's projection, rebuilt from the log when stale (or as of ``as_of``)."""
        self._check_args(user_id=user_id)
        if as_of is not None:
            return UserMemory.from_events(user_id, self._read_stream(user_id, up_to_seq=as_of))
        with self._lock:
            cached = self._memories.get(user_id)
            # the version and the store's purge count: another process's write or purge
            version, purges = self.store.stream_mark(user_id)
            if cached is not None and self._purges.get(user_id) != purges:
                self._forget(user_id)  # every layer's projections of the user: rebuilt anew
            if cached is None or (cached.version, self._purges.get(user_id)) != (version, purges):
                cached = UserMemory.from_events(
                    user_id, self._read_stream(user_id), self._upcaster()
                )
                # a purge (erasure by audit id) leaves the stream's version past its last event
                cached.version = version
                self._memories[user_id] = cached
                self._purges[user_id] = purges
            return cached

    def version(self, user_id: str) -> int:
        """The user's stream version now: pass it as ``expected_version`` to make a write
        conditional on nothing having been appended since (0: no events yet)."""
        self._check_args(user_id=user_id)
        return self.store.stream_version(user_id)

    def _read_stream(self, user_id: str, *, up_to_seq: int | None = None) -> list[Event]:
        """The events reads of the user fold: the memory switch and merged ids applied
        (``memkg.identity.stream``); writes append to the user's own stream."""
        events, ids = view(user_id, self.store.read_stream, up_to_seq)
        if up_to_seq is None:
            for other in ids - {user_id}:
                self._joined_by.setdefault(other, set()).add(user_id)
        return events

    def _writable(self, user_id: str) -> UserMemory:
        """The user's memory, or ``MemoryDisabled`` when the user turned memory off."""
        memory = self.memory(user_id)
        if memory.memory_off is not None:
            raise MemoryDisabled(user_id)
        return memory

    def _apply(self, user_id: str, events: Sequence[Event]) -> None:
        """Fold newly appended events into the cached projections (layers add theirs)."""
        if self._joined_by:
            self._forget_joined(user_id)
        memory = self._memories.get(user_id)
        if memory is None:
            return
        for event in events:
            memory.apply(event)

    def _forget_joined(self, user_id: str) -> None:
        """Drop the cached views that join this user's events (merged ids of one person)."""
        for other in self._joined_by.pop(user_id, ()):
            self._forget(other)

    def _forget(self, user_id: str) -> None:
        """Drop every cached projection of an erased user (layers add theirs)."""
        self._memories.pop(user_id, None)

    def _upcaster(self) -> Callable[[Fact], Fact] | None:
        """How reads upcast old facts to the current schema; none until evolution adds it."""
        return None

    def read_events(self, user_id: str) -> list[Event]:
        self._check_args(user_id=user_id)
        return self.store.read_stream(user_id)

    def _append_events(
        self, user_id: str, events: Sequence[NewEvent], *, expected_version: int | None = None
    ) -> list[Event]:
        """Append ``events`` atomically (after ``expected_version``, default: the current);
        callers have checked them (stages write through their own narrow ports)."""
        with self._lock:
            memory = self._writable(user_id)
            version = memory.version if expected_version is None else expected_version
            appended = self.store.append(user_id, events, expected_version=version)
            self._apply(user_id, appended.events)
            return list(appended.events)

    def _append_plain(
        self,
        user_id: str,
        domain: str,
        kind: EventType,
        payload: dict[str, Any],
        *,
        subject_id: str | None = None,
    ) -> Event:
        """Append one event that is about a key, not a fact.

        ``subject_id`` (a review id, a note id) goes where a fact id would, so that erasure
        by fact id can find the event.
        """
        memory = self._writable(user_id)
        event = NewEvent(
            event_id=self.clock.new_id("evt"),
            type=kind,
            user_id=user_id,
            domain=domain,
            payload=payload,
            recorded_at=self.clock.now(),
            fact_id=subject_id,
        )
        appended = self.store.append(user_id, [event], expected_version=memory.version)
        self._apply(user_id, appended.events)
        return appended.events[0]

    @staticmethod
    def _check_args(**arguments: Any) -> None:
        """Refuse arguments that hold text no store can encode (lone surrogates)."""
        for name, value in arguments.items():
            check_text(value, name)

    def _key_spec(self, domain: str, key: str) -> KeySpec:
        spec = self.registry.spec(domain, key)
        if spec is None:
            raise NotFound(self.registry.unknown_key(domain, key), code="key.unknown")
        return spec

    def _salt(self, user_id: str) -> bytes:
        return self.store.subject_salt(user_id)


def is_postgres_url(db: str) -> bool:
    """``db`` names a PostgreSQL server (``postgresql://...``) rather than a SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


def _open_db(
    config: EngineConfig, decision_log: DecisionLog | None
) -> tuple[EventStore | None, DecisionLog | None]:
    """The store (and decision log beside it) ``config.db`` names."""
    from memkg.decisions.sqlite import SqliteDecisionLog
    from memkg.events.sqlite import SqliteEventStore

    db = str(config.db)
    if db == ":memory:":
        return None, decision_log
    if is_postgres_url(db):
        from memkg.events.postgres import PostgresEventStore

        store = PostgresEventStore(db, schema=config.pg_schema, vacuum=config.erase_vacuum)
        return store, decision_log
    return SqliteEventStore(db), decision_log or SqliteDecisionLog(db)
