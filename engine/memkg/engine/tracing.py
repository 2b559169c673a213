"""Per-request traces, wired: ``render_profile``, ``recall`` and ``decide`` each keep what they
considered, scored, dropped and used (``engine/trace_record.py``), for
``EngineConfig.trace_retention``, with an OpenTelemetry span (``memkg.trace.spans``).

Traces live beside the events (the SQLite file, the PostgreSQL schema; in memory otherwise)
and leave with the user in the erasure's own transaction. A trace is written only through
``TraceStore.put``, which checks in its writing transaction that the user's stream still
exists and that no purge or erasure ran since the request read memory: a request for a user
memkg holds nothing of (never written, or erased), or whose memory is off, keeps no trace,
and neither does one racing with the user's erasure. A retention of zero turns tracing off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memkg.clock import Clock
from memkg.engine.intent import Decider
from memkg.engine.lifecycle import Lifecycle
from memkg.engine.projections import Projections
from memkg.engine.recall import Recall
from memkg.engine.setup import check_args
from memkg.engine.trace_record import decision_trace, profile_trace, recall_trace
from memkg.errors import StoreError
from memkg.events.memory import MemoryEventStore
from memkg.events.store import Companion, EventStore, beside
from memkg.lifecycle.inject import Profile
from memkg.lifecycle.recall import RecallResult
from memkg.model.decision import Decision
from memkg.model.settings import RecallWeights
from memkg.model.trace import Trace
from memkg.once import once
from memkg.trace import spans
from memkg.trace.store import MemoryTraceStore, TraceStore, not_found

log = logging.getLogger(__name__)

Mark = tuple[int, int] | None
"""The user's stream version and the log's purge count before the read; None: no trace."""


def trace_store_beside(store: EventStore) -> TraceStore:
    """Traces live where the events do (in memory beside any other event store)."""
    from memkg.events.postgres import PostgresEventStore
    from memkg.events.sqlite import SqliteEventStore

    if isinstance(store, SqliteEventStore):
        from memkg.trace.sqlite import SqliteTraceStore

        return SqliteTraceStore(store.path)
    if isinstance(store, PostgresEventStore):
        from memkg.trace.postgres import PostgresTraceStore

        return PostgresTraceStore(store.dsn, schema=store.schema)
    return MemoryTraceStore(store.stream_mark)


@dataclass(eq=False, repr=False)
class Tracer:
    """Traced ``render_profile``, ``recall`` and ``decide``, and ``trace``; see ``memkg.Engine``."""

    store: EventStore
    projections: Projections
    lifecycle: Lifecycle
    recalls: Recall
    decider: Decider
    clock: Clock
    lock: threading.RLock
    retention: timedelta
    _expired_at: datetime | None = field(default=None, init=False)

    @once
    def traces(self) -> TraceStore:
        """The trace store beside the events, opened on first use."""
        return trace_store_beside(self.store)

    @property
    def enabled(self) -> bool:
        return self.retention > timedelta(0)

    def render_profile(
        self, user_id: str, domain: str, budget: int | None = None, *,
        session_id: str | None = None, language: str | None = None,
    ) -> Profile:  # fmt: skip
        """The memory block for a system prompt: resolved facts, notes, conflicts, stale items;
        ``trace_id`` finds what went in and what was dropped (``trace``)."""
        check_args(user_id=user_id)
        with spans.span("render_profile") as span:
            mark, now = self._mark(user_id), self.clock.now()
            profile = self.lifecycle.render_profile(
                user_id, domain, budget, session_id=session_id, language=language
            )
            trace_id = self._keep(mark, span, lambda trace_id: profile_trace(
                trace_id, now, user_id, domain, session_id=session_id, profile=profile,
            ))  # fmt: skip
        return profile if trace_id is None else profile.model_copy(update={"trace_id": trace_id})

    def recall(
        self, user_id: str, query: str, k: int = 5, *, domain: str | None = None,
        session_id: str | None = None, weights: RecallWeights | None = None,
    ) -> RecallResult:  # fmt: skip
        """The ``k`` memories most useful for ``query``, with the full ranking trace;
        ``trace_id`` finds it later (``trace``; the query kept as its SHA-256 only).

        ``session_id``: the session recalling, whose notes take part beside long-term memory
        (other sessions' notes, and turn instructions, never do). ``weights`` replaces
        ``config.lifecycle.recall`` for this call (e.g. the lexical ranking:
        ``RecallWeights(semantic=0, relevance=0.5)``).
        """
        check_args(user_id=user_id)
        with spans.span("recall") as span:
            mark, now = self._mark(user_id), self.clock.now()
            found = self.recalls.recall(user_id, query, k, domain=domain,
                                        session_id=session_id, weights=weights)  # fmt: skip
            trace_id = self._keep(mark, span, lambda trace_id: recall_trace(
                trace_id, now, user_id, domain, query=query, k=k, session_id=session_id,
                result=found))  # fmt: skip
        return found if trace_id is None else found.model_copy(update={"trace_id": trace_id})

    def decide(
        self, user_id: str, domain: str, context: Mapping[str, Any] | None = None,
        *, decision: str | None = None, session_id: str | None = None, turn: str | None = None,
    ) -> Decision:  # fmt: skip
        """What the agent should do for the user now, with the reason; logged for replay.

        ``session_id`` and ``turn`` (the turn's ``source_ref``) say where the decision is made:
        a session note counts only in its session, a turn instruction only in its turn, both
        above long-term memory there; every key the rules read holds the value ``resolve``
        gives for the same user, domain, key, session, turn and context.

        ``user_id``, ``domain``, ``decision``, ``session_id`` and ``turn`` meet the envelope
        rules of a write (refused with ``ValidationFailed``, nothing logged); a context the
        rules refuse makes an ``invalid_input`` decision, logged in bounded form. The record's
        ``trace_id`` finds what the decision read, used and left out (``trace``).
        """
        check_args(user_id=user_id)
        with spans.span("decide") as span:
            mark = self._mark(user_id)
            trace_id = self.clock.new_id("trc") if mark is not None else None
            made = self.decider.decide(user_id, domain, context, decision=decision,
                                       session_id=session_id, turn=turn,
                                       trace_id=trace_id)  # fmt: skip
            if trace_id is None:
                return made
            kept = not made.memory_off and self._keep(
                mark, span, lambda trace_id: decision_trace(trace_id, made), trace_id=trace_id
            )
        # the logged record may name a trace that was not kept (``trace`` says not found)
        return made if kept else made.model_copy(update={"trace_id": None})

    def trace(self, trace_id: str) -> Trace:
        """What one ``render_profile``, ``recall`` or ``decide`` considered, scored, dropped
        and used; ``NotFound`` once past the retention or after the user's erasure."""
        check_args(trace_id=trace_id)
        found = self.traces.get(trace_id)
        if found.created_at < self.clock.now() - self.retention:
            raise not_found(trace_id)
        return found

    # -- erasure ------------------------------------------------------------------------------

    def before_erasure(self, ids: Sequence[str]) -> tuple[Companion, ...]:
        """Erasure reaches the traces of every id it touches: in its own transaction when
        they live beside the events (the store is returned to join it), now otherwise."""
        check_args(ids=list(ids))
        if (joined := self._joined()) is not None:
            return (joined,)
        for one in ids:
            self.traces.erase_user(one)
        return ()

    def before_purge(self, user_id: str, fact_ids: Sequence[str]) -> tuple[Companion, ...]:
        """A purge by audit id reaches the user's traces naming those facts: in its own
        transaction when they live beside the events, now otherwise."""
        if self._joined() is not None:
            return (self.traces.citing(fact_ids),)
        self.traces.erase_citing(user_id, fact_ids)
        return ()

    def _joined(self) -> Companion | None:
        """The trace store, when it can join the event store's erasure transaction."""
        traces = self.traces
        if isinstance(traces, Companion) and (
            beside(self.store, traces) or isinstance(self.store, MemoryEventStore)
        ):
            return traces
        return None

    def close(self) -> None:
        if (traces := self.__dict__.get("traces")) is not None:
            traces.close()

    # -- keeping ------------------------------------------------------------------------------

    def _mark(self, user_id: str) -> Mark:
        """What the trace's write checks against; None when there will be no trace (tracing
        off, nothing stored of the user, their memory off)."""
        if not self.enabled:
            return None
        mark = self.store.stream_mark(user_id)
        if mark[0] == 0 or self.projections.memory(user_id).memory_off is not None:
            return None
        return mark

    def _keep(
        self, mark: Mark, span: spans.Span, build: Callable[[str], Trace],
        trace_id: str | None = None,
    ) -> str | None:  # fmt: skip
        """Store the trace; its id, or None when it was not stored: the user's stream went
        (an erasure), a purge ran meanwhile, or the store cannot take it (a read-only or full
        disk). The request it traces still answers."""
        if mark is None:
            return None
        trace = build(trace_id or self.clock.new_id("trc"))
        spans.annotate(span, trace)
        try:
            with self.lock:  # in-process erasures hold it: the in-memory twin checks under it
                kept = self.traces.put(trace, mark[1])
            if kept:
                self._expire(trace.created_at)
        except StoreError as exc:
            log.warning("trace not kept", extra={"operation": trace.operation,
                                                 "error": exc.code})  # fmt: skip
            return None
        return trace.trace_id if kept else None

    def _expire(self, now: datetime) -> None:
        """At most once per hundredth of the retention (and per minute): cheap on writes."""
        every = max(self.retention / 100, timedelta(minutes=1))
        with self.lock:
            due = self._expired_at is None or now - self._expired_at >= every
            if due:
                self._expired_at = now
        if due:
            self.traces.expire(now - self.retention)
