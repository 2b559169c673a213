"""A key's edge weights over time: each edge weighed as memory stood at sampled moments.

The weights come from ``GraphService.holding_over``: ``Engine.holding`` (the one definition
of a weight, applied as of a time) at every moment, from one fold of the log (where the log's
times go back, a moment reads it up to its first event recorded later). So the plot
shows what decisions would have seen then: signals lifting an edge, rejections halving it,
time decaying it. Marks name the events on the key (values written, superseded, retracted;
signals) at the moment they were recorded.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from memkg.engine import Engine
from memkg.model.event import EventType

_FACT_EVENTS = {
    EventType.FACT_ASSERTED: "written",
    EventType.FACT_CONFIRMED: "confirmed",
    EventType.FACT_SUPERSEDED: "superseded",
    EventType.FACT_RETRACTED: "retracted",
    EventType.FACT_EXPIRED: "expired",
}


class WeightPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    weight: float
    usable: bool


class WeightLine(BaseModel):
    """One edge ``user ─key→ target`` through time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    points: tuple[WeightPoint, ...]


class WeightMark(BaseModel):
    """An event on the key: ``kind`` is a signal kind or what happened to a fact."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    kind: str
    event_id: str
    target: str | None = None
    fact_id: str | None = None


class WeightSeries(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    domain: str
    key: str
    start: datetime | None
    end: datetime
    threshold: float
    lines: tuple[WeightLine, ...]
    marks: tuple[WeightMark, ...]
    """The newest ``MAX_MARKS`` events on the key, oldest first."""
    marks_total: int = 0
    """How many events the key has had (more than ``marks`` holds when past the cap)."""


MAX_MARKS = 500
"""The most events a series lists (the newest): a key written every turn for years has
tens of thousands."""


def weight_series(
    engine: Engine, user_id: str, domain: str, key: str, samples: int = 40
) -> WeightSeries:
    """The key's edges weighed at ``samples`` even moments and around as many of its events
    (spread over its history): each moment weighs memory as it stood then. The user's log is
    folded once, read as the fold passes each moment (``GraphService.holding_over``), so the
    work is the log once plus the domain's live claims at each of about ``3 * samples``
    moments, not the log at each moment."""
    now = engine.clock.now()
    # memory off (kept frozen): no read folds it, the log's signals and their values included
    enabled = engine.memory_state(user_id).enabled
    marks = _marks(engine, user_id, domain, key) if enabled else ()
    threshold = engine.config.weights.threshold
    if not marks:
        return WeightSeries(user_id=user_id, domain=domain, key=key, start=None, end=now,
                            threshold=threshold, lines=(), marks=())  # fmt: skip
    start = min(m.at for m in marks)
    span = max(now - start, timedelta(seconds=1))
    moments = {start + span * (i / max(samples - 1, 1)) for i in range(samples)}
    # as many events as samples, the first and the newest among them
    last, count = len(marks) - 1, min(samples, len(marks))
    for i in range(count):
        mark = marks[round(i * last / max(count - 1, 1))]
        moments |= {mark.at, max(start, mark.at - timedelta(seconds=1))}
    lines: dict[str, list[WeightPoint]] = {}
    for at, edges in engine.graphs.holding_over(user_id, (m for m in moments if m <= now),
                                                domain, key):  # fmt: skip
        for edge in edges:
            point = WeightPoint(at=at, weight=round(edge.weight, 6), usable=edge.usable)
            lines.setdefault(edge.target, []).append(point)
    return WeightSeries(
        user_id=user_id, domain=domain, key=key, start=start, end=now, threshold=threshold,
        lines=tuple(WeightLine(target=t, points=tuple(p)) for t, p in sorted(lines.items())),
        marks=marks[-MAX_MARKS:], marks_total=len(marks),
    )  # fmt: skip


def _marks(engine: Engine, user_id: str, domain: str, key: str) -> tuple[WeightMark, ...]:
    facts = {f.id for f in engine.history(user_id, key, domain)}
    found = []
    for event in engine.read_events(user_id):
        if event.domain != domain:
            continue
        if event.type is EventType.SIGNAL_RECORDED and event.payload.get("key") == key:
            found.append(WeightMark(at=event.recorded_at, kind=str(event.payload["kind"]),
                                    event_id=event.event_id,
                                    target=str(event.payload["target"])))  # fmt: skip
        elif event.type in _FACT_EVENTS and event.fact_id in facts:
            found.append(WeightMark(at=event.recorded_at, kind=_FACT_EVENTS[event.type],
                                    event_id=event.event_id, fact_id=event.fact_id))  # fmt: skip
    return tuple(found)
