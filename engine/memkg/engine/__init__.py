"""The engine: the one place that wires the stages together.

``Engine`` is a thin front: it builds the stage services, hands each its collaborators in
its constructor, and delegates every public method to one of them (``via``). The services,
in pipeline order: ``Reads`` and ``FactWriter`` (facts), ``GraphService``, ``Arbiter`` and
``ReviewDesk`` (arbitration), ``Decider`` and ``Replayer`` (intent), ``Lifecycle``,
``Evolution``; ``Tracer`` keeps what each profile, recall and decision read and used;
``MemorySwitch`` and ``Identity`` (merged ids) say whose memory a read sees;
``Journal`` is the one way events are appended, ``Projections`` owns every per-user cache,
``Setup`` what the roots hold.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from memkg.clock import Clock, SystemClock
from memkg.config import EngineConfig
from memkg.decisions.log import DecisionLog, MemoryDecisionLog
from memkg.engine.arbitration import Arbiter
from memkg.engine.delegate import shared, via
from memkg.engine.erasure import Eraser
from memkg.engine.evolution import Evolution
from memkg.engine.facts import FactWriter, IngestOutcome, IngestResult
from memkg.engine.graph import GraphService
from memkg.engine.identity import Identity, MemorySwitch, SwitchReceipt
from memkg.engine.intent import Decider
from memkg.engine.journal import Journal
from memkg.engine.lifecycle import Lifecycle
from memkg.engine.patterns import PatternWriter
from memkg.engine.projections import Projections, Upcast
from memkg.engine.reads import Reads, RebuildReport
from memkg.engine.recall import Recall
from memkg.engine.replay import Replayer
from memkg.engine.reviews import ReviewDesk
from memkg.engine.rule_bundle import RuleBook
from memkg.engine.setup import Setup, check_args
from memkg.engine.tracing import Tracer
from memkg.events.memory import MemoryEventStore
from memkg.events.retry import Attempts
from memkg.events.store import EventStore
from memkg.llm.port import LLM

__all__ = ["Engine", "IngestOutcome", "IngestResult", "RebuildReport", "SwitchReceipt"]


class Engine:
    """Validates, remembers and answers for one store.

    ``store`` defaults to an in-memory log; ``Engine.open(path)`` gives the embedded default
    (SQLite). ``config``, ``clock``, ``llm`` and ``decision_log`` are injected, never read
    from globals.
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
        self.config = config = config or EngineConfig()
        if store is None and config.db is not None:
            store, decision_log = _open_db(config, decision_log)
        self.store = store = store if store is not None else MemoryEventStore()
        self.clock = clock = clock or SystemClock()
        if decision_log is None:
            decision_log = _decision_log_beside(store)
        self.decision_log = log = decision_log
        self._lock = lock = threading.RLock()
        self.conflicts = conflicts = Attempts()
        """Conflicts unconditional writes met: ``retried`` internally, ``surfaced`` to callers."""
        self.setup = setup = Setup(config)
        self.projections = projections = Projections(
            store,
            setup.new_graph,
            upcaster=self._upcaster,
            max_users=config.resident_users,
            max_bytes=config.memory_bound,
            lock=lock,  # a read folding another process's writes waits for a decision
        )
        self.arbiter = arbiter = Arbiter(setup, projections, clock, lock)
        self.journal = journal = Journal(store, projections, clock, lock, arbiter.freezes)
        self.reads = reads = Reads(store, projections, clock, self._upcaster, setup, lock)
        self.writer = writer = FactWriter(setup, projections, journal, reads, clock, conflicts)
        self.graphs = GraphService(setup, projections, journal, clock, conflicts)
        self.reviews = reviews = ReviewDesk(setup, journal, conflicts)
        self.patterns = PatternWriter(setup, projections, writer, clock)
        book = RuleBook(setup, log, projections)
        self.intent = decider = Decider(setup, store, projections, arbiter, book, log, clock, lock)
        self.replays = Replayer(setup, projections, decider, log)
        self.lifecycle = lifecycle = Lifecycle(
            self, config, setup, arbiter, journal, clock, llm, conflicts
        )
        self.recalls = recalls = Recall(reads.facts_in, lifecycle.notes, arbiter.resolved_facts,
                                        setup, store, clock)  # fmt: skip
        self.tracer = tracer = Tracer(store, projections, lifecycle, recalls, decider, clock, lock,
                                      config.trace_retention)  # fmt: skip
        self.eraser = eraser = Eraser(
            store, log, projections, clock, lock, (recalls.before_erasure, tracer.before_erasure),
            recalls.erase_vectors, (recalls.before_purge, tracer.before_purge),
            _both(setup.forget_texts, reviews.queue.forget),
        )  # fmt: skip
        self.switch = MemorySwitch(store, journal, clock, lock, eraser.erase)
        self.identity = Identity(setup, store, projections, journal, clock, lock)
        self.evolution = Evolution(setup, store, projections, journal, decider, log, clock)

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
        config = kwargs.get("config") or EngineConfig()
        store = SqliteEventStore(path, vacuum=config.erase_vacuum)
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

    def version(self, user_id: str) -> int:
        """The user's stream version now: pass it as ``expected_version`` to make a write
        conditional on nothing having been appended since (0: no events yet)."""
        check_args(user_id=user_id)
        return self.store.stream_version(user_id)

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        """The user's stream version and the store's count of purges and erasures, read
        together (``EventStore.stream_mark``)."""
        check_args(user_id=user_id)
        return self.store.stream_mark(user_id)

    @property
    def lock(self) -> threading.RLock:
        """The engine's write lock: every write, decision and erasure of this engine holds it
        (a consolidation holds it from its check for erasures to the write that follows)."""
        return self._lock

    def close(self) -> None:
        """Wait for background consolidations, close a model and an index the engine built,
        the trace store, the decision log and the store."""
        self.lifecycle.close()
        self.recalls.close()
        self.tracer.close()
        self.decision_log.close()
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _upcaster(self) -> Upcast:
        return self.setup.upcasters.upcast

    # -- what the roots hold (``Setup``) ----------------------------------------------------

    layers = shared(Setup.layers)
    policy = shared(Setup.policy)
    sources = shared(Setup.sources)
    weights = shared(Setup.weights)
    ontology = shared(Setup.ontology)
    registry = shared(Setup.registry)
    validator = shared(Setup.validator)
    knowledge = shared(Setup.knowledge)
    entity_keys = shared(Setup.entity_keys)
    reader = shared(Setup.reader)
    upcasters = shared(Setup.upcasters)

    @property
    def llm(self) -> LLM | None:
        """The model: the one given, else an adapter built from ``config.llm`` on first use."""
        return self.lifecycle.llm

    # -- facts ---------------------------------------------------------------------------------

    validate = via("writer", FactWriter.validate)
    ingest = via("writer", FactWriter.ingest)
    ingest_many = via("writer", FactWriter.ingest_many)
    confirm = via("writer", FactWriter.confirm)
    retract = via("writer", FactWriter.retract)
    expire_due = via("writer", FactWriter.expire_due)
    memory = via("reads", Reads.memory)
    read_events = via("reads", Reads.read_events)
    facts = via("reads", Reads.facts)
    fact = via("reads", Reads.fact)
    domain_of = via("reads", Reads.domain_of)
    history = via("reads", Reads.history)
    rebuild = via("reads", Reads.rebuild)
    erase = via("eraser", Eraser.erase)
    erase_audit_id = via("eraser", Eraser.erase_audit_id)

    # -- graph ---------------------------------------------------------------------------------

    signal = via("graphs", GraphService.signal)
    user_graph = via("graphs", GraphService.user_graph)
    graph = via("graphs", GraphService.graph)
    edges = via("graphs", GraphService.edges)
    paths = via("graphs", GraphService.paths)
    recent_entities = via("graphs", GraphService.recent_entities)
    holding = via("graphs", GraphService.holding)

    # -- arbitration ---------------------------------------------------------------------------

    resolve = via("arbiter", Arbiter.resolve)
    resolved_facts = via("arbiter", Arbiter.resolved_facts)
    review_queue = via("reviews", ReviewDesk.review_queue)
    review = via("reviews", ReviewDesk.review)
    resolve_review = via("reviews", ReviewDesk.resolve_review)
    derive_patterns = via("patterns", PatternWriter.derive_patterns)

    # -- decisions -----------------------------------------------------------------------------

    decide = via("tracer", Tracer.decide)
    reload_rules = via("intent", Decider.reload_rules)
    rules_diff = via("intent", Decider.rules_diff)
    explain = via("replays", Replayer.explain)
    replay = via("replays", Replayer.replay)
    decisions = via("replays", Replayer.decisions)

    # -- lifecycle -----------------------------------------------------------------------------

    check_text = via("lifecycle", Lifecycle.check_text)
    declared_keys = via("lifecycle", Lifecycle.declared_keys)
    key_schema = via("lifecycle", Lifecycle.key_schema)
    note_consent = via("lifecycle", Lifecycle.note_consent)
    notes = via("lifecycle", Lifecycle.notes)
    note_book = via("lifecycle", Lifecycle.note_book)
    note_tool = via("lifecycle", Lifecycle.note_tool)
    append_notes = via("lifecycle", Lifecycle.append_notes)
    save_memory_note = via("lifecycle", Lifecycle.save_memory_note)
    handle_note_call = via("lifecycle", Lifecycle.handle_note_call)
    prune = via("lifecycle", Lifecycle.prune)
    render_profile = via("tracer", Tracer.render_profile)
    extract = via("lifecycle", Lifecycle.extract)
    consolidate = via("lifecycle", Lifecycle.consolidate)
    recall = via("tracer", Tracer.recall)
    trace = via("tracer", Tracer.trace)

    # -- the memory switch; one person, several ids ------------------------------------------

    memory_state = via("switch", MemorySwitch.memory_state)
    disable_memory = via("switch", MemorySwitch.disable_memory)
    enable_memory = via("switch", MemorySwitch.enable_memory)
    merge_users = via("identity", Identity.merge_users)
    split_users = via("identity", Identity.split_users)
    merges = via("identity", Identity.merges)

    # -- evolution -----------------------------------------------------------------------------

    schema_history = via("evolution", Evolution.schema_history)
    migration_dry_run = via("evolution", Evolution.migration_dry_run)
    apply_migration = via("evolution", Evolution.apply_migration)

    # -- catalog -------------------------------------------------------------------------------

    def domains(self) -> list[dict[str, Any]]:
        """Every domain in force: its root, key groups, decisions, actions, file problems."""
        from memkg.engine.catalog import domains

        return domains(self.setup, self.intent.book)

    def keys(self, domain: str) -> list[dict[str, Any]]:
        """The domain's keys: kind, sensitivity, consent, schema and the file each came from."""
        from memkg.engine.catalog import keys

        check_args(domain=domain)
        return keys(self.setup, domain)


def _decision_log_beside(store: EventStore) -> DecisionLog:
    """Decisions live where the events do (in memory for the in-memory store)."""
    from memkg.events.postgres import PostgresEventStore

    if isinstance(store, PostgresEventStore):
        from memkg.decisions.postgres import PostgresDecisionLog

        return PostgresDecisionLog(store.dsn, schema=store.schema)
    return MemoryDecisionLog()


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
    return SqliteEventStore(db, vacuum=config.erase_vacuum), decision_log or SqliteDecisionLog(db)


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    """``first``, then ``second``."""

    def both() -> None:
        first()
        second()

    return both
