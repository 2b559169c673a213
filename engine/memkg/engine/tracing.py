"""Per-request traces, wired for ``Engine``: what a profile, a recall or a decision considered.

Each traced call gets a trace id from the clock, builds a ``Trace`` from what the stage
returned (``Profile``, ``RecallResult``, ``Decision``), keeps it in the ``TraceStore`` beside
the decision log for ``EngineConfig.trace_retention``, and reports an OpenTelemetry span
(``memkg.trace.spans``). A retention of zero turns tracing off: no trace, no trace id.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memkg.decisions.log import DecisionLog
from memkg.errors import StoreError
from memkg.model.decision import Decision
from memkg.model.trace import MAX_ITEMS, MAX_REASON_CHARS, Operation, Trace, TraceItem
from memkg.rules.validation import bounded_context
from memkg.trace import spans
from memkg.trace.store import MemoryTraceStore, TraceStore, not_found

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memkg.clock import Clock
    from memkg.lifecycle.inject import Profile
    from memkg.lifecycle.recall import RecallResult


def trace_store_beside(log: DecisionLog) -> TraceStore:
    """Traces live where the decisions do (in memory for the in-memory log)."""
    from memkg.decisions.postgres import PostgresDecisionLog
    from memkg.decisions.sqlite import SqliteDecisionLog

    if isinstance(log, SqliteDecisionLog):
        from memkg.trace.sqlite import SqliteTraceStore

        return SqliteTraceStore(log.path)
    if isinstance(log, PostgresDecisionLog):
        from memkg.trace.postgres import PostgresTraceStore

        return PostgresTraceStore(log.dsn, schema=log.schema, shared=log)
    return MemoryTraceStore()


class Traces:
    """Makes, keeps, finds and forgets traces; expired ones go as new ones come."""

    def __init__(self, store: TraceStore, clock: Clock, retention: timedelta) -> None:
        self.store, self.clock, self.retention = store, clock, retention
        self._lock = threading.Lock()
        self._expired_at: datetime | None = None

    @property
    def enabled(self) -> bool:
        return self.retention > timedelta(0)

    def new_id(self) -> str | None:
        return self.clock.new_id("trc") if self.enabled else None

    @contextmanager
    def span(self, operation: Operation) -> Iterator[spans.Span]:
        with spans.span(operation) as span:
            yield span

    def keep(self, trace: Trace, span: spans.Span) -> bool:
        """Store ``trace``; False when the store cannot take it (a read-only or full disk):
        the request it traces still answers, without a trace."""
        spans.annotate(span, trace)
        try:
            self.store.put(trace)
            self._expire(trace.created_at)
        except StoreError as exc:
            log.warning("trace not kept", extra={"operation": trace.operation,
                                                 "error": exc.code})  # fmt: skip
            return False
        return True

    def _expire(self, now: datetime) -> None:
        """At most once per hundredth of the retention (and per minute): cheap on writes."""
        every = max(self.retention / 100, timedelta(minutes=1))
        with self._lock:
            due = self._expired_at is None or now - self._expired_at >= every
            if due:
                self._expired_at = now
        if due:
            self.store.expire(now - self.retention)

    def get(self, trace_id: str) -> Trace:
        found = self.store.get(trace_id)
        if found.created_at < self.clock.now() - self.retention:
            raise not_found(trace_id)
        return found


# -- building traces ------------------------------------------------------------------------


def _reason(text: str | None) -> str | None:
    return None if text is None else text[:MAX_REASON_CHARS]


def _bounded(items: Iterable[TraceItem]) -> tuple[tuple[TraceItem, ...], int, dict[str, int]]:
    """Used items first, then by score; at most ``MAX_ITEMS`` listed, all counted."""
    every = sorted(items, key=lambda i: (not i.used, -(i.score or 0.0), i.ref))
    used = sum(i.used for i in every)
    counts = {"considered": len(every), "used": used, "dropped": len(every) - used}
    return tuple(every[:MAX_ITEMS]), max(0, len(every) - MAX_ITEMS), counts


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def profile_trace(trace_id: str, now: datetime, user_id: str, domain: str, *,
                  session_id: str | None, profile: Profile) -> Trace:  # fmt: skip
    items = [
        *(TraceItem(ref=i.ref, kind=i.section, score=round(i.weight, 4), used=True)
          for i in profile.included),
        *(TraceItem(ref=i.ref, kind=i.section, score=round(i.weight, 4), used=False,
                    reason="over the token budget: lowest weight goes first")
          for i in profile.dropped),
    ]  # fmt: skip
    listed, unlisted, counts = _bounded(items)
    return Trace(
        trace_id=trace_id, operation="render_profile", user_id=user_id, domain=domain,
        created_at=now, request=bounded_context({"budget": profile.budget,
                                                 "session_id": session_id}),
        items=listed, unlisted=unlisted, counts=counts,
        output={"tokens": profile.tokens, "budget": profile.budget, "counter": profile.counter,
                "sha256": _sha256(profile.text)},
    )  # fmt: skip


def recall_trace(trace_id: str, now: datetime, user_id: str, domain: str | None, *,
                 query: str, k: int, result: RecallResult) -> Trace:  # fmt: skip
    items = []
    weights = result.weights
    # what recall's min_relevance bound reads: the larger of the weighted matching scores
    matchers = [m for m in ("semantic", "relevance") if getattr(weights, m, 0) > 0] or [
        "semantic", "relevance"]  # fmt: skip
    for c in result.candidates:
        scores = {n: float(v) for n, v in c.scores.model_dump().items()
                  if isinstance(v, int | float)}  # fmt: skip
        why = None
        if not c.injected:
            matched = max(scores.get(m, 0.0) for m in matchers)
            why = c.rejected or (
                "too little match with the query"
                if matched < weights.min_relevance
                else f"below the top {k}"
            )
        items.append(TraceItem(ref=c.ref, kind=c.kind, score=scores.get("total"), scores=scores,
                               used=c.injected, reason=_reason(why)))  # fmt: skip
    listed, unlisted, counts = _bounded(items)
    return Trace(
        trace_id=trace_id, operation="recall", user_id=user_id, domain=domain, created_at=now,
        request=bounded_context({"query": query, "k": k}), items=listed, unlisted=unlisted,
        counts=counts,
        output={"injected": list(result.injected), "semantic_index": result.semantic_index},
    )  # fmt: skip


def decision_trace(trace_id: str, decision: Decision) -> Trace:
    """The memories a decision read: each key's claims as arbitration scored them, what the
    rules bound, and what was left out and why."""
    items: dict[str, TraceItem] = {}
    selected = set(decision.arbitration.selected) if decision.arbitration else set()
    suppressed = {s.rule_id: s.reason for s in decision.arbitration.suppressed} \
        if decision.arbitration else {}  # fmt: skip
    for node in decision.explanation.memory:
        for claim in node.claims:
            ref = f"fact:{claim.fact_id}"
            items[ref] = TraceItem(ref=ref, kind="claim", key=node.key, score=claim.score,
                                   used=claim.standing == "won",
                                   reason=None if claim.standing == "won" else
                                   _reason(f"{claim.standing}: {claim.reason}"))  # fmt: skip
    for candidate in decision.candidates:
        for binding in candidate.bindings:
            if binding.ref == "context":
                continue
            used = candidate.rule_id in selected
            why = None if used else suppressed.get(candidate.rule_id, "its rule was not selected")
            items[binding.ref] = TraceItem(ref=binding.ref, kind="binding", used=used,
                                           reason=_reason(f"rule {candidate.rule_id}: {why}"
                                                          if why else None))  # fmt: skip
    for left in decision.left_out:
        detail = f": {left.detail}" if left.detail else ""
        items.setdefault(left.ref, TraceItem(ref=left.ref, kind=left.kind, key=left.key,
                                             used=False,
                                             reason=_reason(left.reason + detail)))  # fmt: skip
    listed, unlisted, counts = _bounded(items.values())
    request = decision.request
    return Trace(
        trace_id=trace_id, operation="decide", user_id=request.user_id, domain=request.domain,
        created_at=decision.decided_at,
        # the context as the decision log holds it: already in bounded form
        request={"decision": request.decision, "context": request.context,
                 "session_id": request.session_id, "turn": request.turn},
        items=listed, unlisted=unlisted, counts=counts,
        output={"decision_id": decision.decision_id, "status": decision.result.status.value,
                "action": decision.result.action, "rules": sorted(selected)},
    )  # fmt: skip


__all__ = [
    "Traces",
    "decision_trace",
    "profile_trace",
    "recall_trace",
    "trace_store_beside",
]
