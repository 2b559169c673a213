"""The weight series folds the user's log once: the same figures as weighing memory anew at
each moment (``Engine.holding``), at the cost of one pass over the log."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.graph.projection import UserGraph
from memkg.model.event import Event
from memkg.service.inspect.series import WeightLine, WeightPoint, weight_series
from support.inspector import NIGHT, seed

START = NIGHT - timedelta(days=120)


def _per_moment(
    engine: Engine, user: str, domain: str, key: str, samples: int
) -> tuple[WeightLine, ...]:
    """The series' lines as each moment's own ``holding`` read weighs them (the reference)."""
    now = engine.clock.now()
    marks = weight_series(engine, user, domain, key, samples).marks  # every mark, when few
    start = min(m.at for m in marks)
    span = max(now - start, timedelta(seconds=1))
    moments = {start + span * (i / max(samples - 1, 1)) for i in range(samples)}
    last, count = len(marks) - 1, min(samples, len(marks))
    for i in range(count):
        mark = marks[round(i * last / max(count - 1, 1))]
        moments |= {mark.at, max(start, mark.at - timedelta(seconds=1))}
    lines: dict[str, list[WeightPoint]] = {}
    for at in sorted(m for m in moments if m <= now):
        for edge in engine.holding(user, at, domain):
            if edge.relation == key:
                point = WeightPoint(at=at, weight=round(edge.weight, 6), usable=edge.usable)
                lines.setdefault(edge.target, []).append(point)
    return tuple(WeightLine(target=t, points=tuple(p)) for t, p in sorted(lines.items()))


def _travel(engine: Engine, clock: FrozenClock, user: str, *, back: bool = False) -> None:
    """Two months of seat and airline preferences: values superseded, one retracted, signals
    of every kind, days passing; with ``back``, the clock steps back midway (a log whose
    times are not in order)."""

    def write(key: str, value: Any, source: str = "dialogue", **extra: Any) -> None:
        engine.ingest({"user_id": user, "domain": "travel", "key": key, "value": value,
                       "source": source, "confidence": 0.8, "change": True, **extra})  # fmt: skip

    clock.set(START)
    write("seat.preference", "window", source="profile")
    write("airline.preferred", "airline:MU")
    clock.advance(timedelta(days=3))
    engine.signal(user, "travel", "seat.preference", "window", "mention")
    clock.advance(timedelta(days=5))
    write("seat.preference", "aisle")
    engine.signal(user, "travel", "seat.preference", "aisle", "ignored")
    clock.advance(timedelta(days=-20 if back else 10))
    engine.signal(user, "travel", "seat.preference", "aisle", "rejected")
    engine.signal(user, "travel", "seat.preference", "aisle", "correction")
    write("seat.preference", "middle")
    clock.advance(timedelta(days=20))
    held = [f for f in engine.history(user, "seat.preference", "travel")
            if f.status.value == "active"]  # fmt: skip
    engine.retract(user, held[-1].id, "said by mistake")
    clock.advance(timedelta(days=15))
    write("seat.preference", "window")
    engine.signal(user, "travel", "seat.preference", "window", "mention")
    clock.set(NIGHT)


@pytest.mark.parametrize("samples", [1, 2, 7, 40])
def test_the_series_equals_weighing_each_moment_anew(samples: int) -> None:
    clock = FrozenClock(START)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    seed(engine, clock, "mei")  # a list value (several targets), a rejection, decay
    _travel(engine, clock, "ana")
    _travel(engine, clock, "bo", back=True)
    times = [e.recorded_at for e in engine.read_events("bo")]
    assert times != sorted(times)  # the clock stepped back: a moment folds events not in a row
    for user, domain, key in (("mei", "health", "medical.conditions"),
                              ("mei", "health", "contact.preference"),
                              ("ana", "travel", "seat.preference"),
                              ("bo", "travel", "seat.preference"),
                              ("ana", "travel", "airline.preferred")):  # fmt: skip
        series = weight_series(engine, user, domain, key, samples)
        assert series.lines, (user, key)
        assert series.lines == _per_moment(engine, user, domain, key, samples), (user, key)


def test_a_merged_log_weighs_as_each_moment_does() -> None:
    """Two ids merged: the joined log interleaves two streams."""
    clock = FrozenClock(START)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    for day, (user, seat) in enumerate([("p", "window"), ("o", "aisle"), ("p", "aisle"),
                                        ("o", "middle"), ("p", "window")]):  # fmt: skip
        clock.set(START + timedelta(days=10 * day))
        engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                       "value": seat, "source": "dialogue", "change": True})  # fmt: skip
        engine.signal(user, "travel", "seat.preference", seat, "mention")
    clock.set(NIGHT)
    proposed = engine.merge_users("p", "o", by="ops", reason="same person")
    engine.merge_users("p", "o", by="ops", reason="same person", confirm=proposed.merge_id)
    for samples in (3, 40):
        series = weight_series(engine, "p", "travel", "seat.preference", samples)
        assert series.lines
        assert series.lines == _per_moment(engine, "p", "travel", "seat.preference", samples)


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Event]]:
    """Every event any graph folds while the test runs."""
    seen: list[Event] = []
    apply = UserGraph.apply

    def counted(graph: UserGraph, event: Event, asserted: Any = None) -> None:
        seen.append(event)
        apply(graph, event, asserted)

    monkeypatch.setattr(UserGraph, "apply", counted)
    yield seen


def _written(events: int) -> tuple[Engine, int]:
    """A user whose seat preference was written ``events // 2`` times (each write supersedes
    the last: about ``events`` events), an hour apart; the log's length."""
    clock = FrozenClock(START)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    for i in range(events // 2):
        engine.ingest({"user_id": "w", "domain": "travel", "key": "seat.preference",
                       "value": ["window", "aisle"][i % 2], "source": "dialogue",
                       "change": True})  # fmt: skip
        clock.advance(timedelta(hours=1))
    engine.edges("w", "travel")  # the current graph resident: the series alone is counted
    return engine, len(engine.read_events("w"))


def test_the_series_folds_the_log_once_whatever_the_samples(folded: list[Event]) -> None:
    """Counted, not timed: the events folded are the log's, once, for 4x the history and for
    5x the samples (weighing memory anew at each moment folded samples x events)."""
    counts: dict[tuple[int, int], tuple[int, int]] = {}
    for events in (60, 240):
        engine, logged = _written(events)
        for samples in (8, 40):
            folded.clear()
            series = weight_series(engine, "w", "travel", "seat.preference", samples)
            assert series.lines and series.marks_total >= events - 2
            counts[(events, samples)] = (len(folded), logged)
    for (events, samples), (count, logged) in counts.items():
        assert count == logged, (events, samples, count, logged)
    assert counts[(240, 40)][0] <= 4 * counts[(60, 40)][0] + 8


def test_a_log_whose_times_go_back_is_folded_once_too(folded: list[Event]) -> None:
    """Two writers whose clocks differ by a second, writing in turn every half second: the
    log's times go back at every other event. Each event is still folded once, and no moment
    shows an event recorded after it (a moment reads the log up to its first later event)."""
    clock = FrozenClock(START)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    for i in range(60):
        clock.set(START + timedelta(seconds=i / 2 + (1 if i % 2 else 0)))
        engine.ingest({"user_id": "s", "domain": "travel", "key": "seat.preference",
                       "value": ["window", "aisle", "middle"][i % 3], "source": "dialogue",
                       "change": True})  # fmt: skip
    clock.set(NIGHT)
    events = engine.read_events("s")
    assert [e.recorded_at for e in events] != sorted(e.recorded_at for e in events)
    engine.edges("s", "travel")
    folded.clear()
    series = weight_series(engine, "s", "travel", "seat.preference", 200)
    assert series.lines and len(folded) == len(events)
    moments = sorted({p.at for line in series.lines for p in line.points})
    asserted = {e.fact_id: e.recorded_at for e in events if e.type.value == "fact.asserted"}
    for at, edges in engine.graphs.holding_over("s", moments, "travel", "seat.preference"):
        assert edges and all(asserted[e.fact_id] <= at for e in edges if e.fact_id), at


def test_moments_come_back_in_order_each_once() -> None:
    clock = FrozenClock(START)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    _travel(engine, clock, "ana")
    moments = [NIGHT, START, NIGHT, START + timedelta(days=9), START - timedelta(days=1)]
    found = engine.graphs.holding_over("ana", moments, "travel", "seat.preference")
    assert [at for at, _ in found] == sorted(set(moments))
    before, *held = found
    assert before[1] == []  # nothing was recorded yet
    for at, edges in held:
        assert edges == [e for e in engine.holding("ana", at, "travel")
                         if e.relation == "seat.preference"]  # fmt: skip
