"""A user not resident is folded from the store's rows for a decision: no ``Event`` per row, no
RDF graph, no entity edge index; and it decides, explains and exports as the events' fold does.

What runs is counted, not timed: the interpreter's profiling hook sees each call of the
functions that build an event from a row (``stored_event``, pydantic's ``__init__`` of an
``Event``), fold one event (``UserGraph.apply``), keep the edge index (``UserGraph._track``)
or start an rdflib graph (``Graph.__init__``), so no code under test is replaced. The same
counts taken with the store's rows hidden (the events' path) show what the counter sees.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import rdflib
from pydantic import BaseModel

from memkg import Engine, FrozenClock
from memkg.arbitration.review import reviews_from
from memkg.config import EngineConfig
from memkg.events import memory as memory_events
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import row_stream
from memkg.graph.projection import UserGraph
from memkg.model.event import Event, NewEvent

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
NIGHT = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)  # 22:15 in Shanghai
CONFIG = EngineConfig(shacl=False)
FEVER = {"symptom": "fever"}

_WATCHED = {
    memory_events.stored_event.__code__: "event from a row",
    UserGraph.apply.__code__: "event folded",
    UserGraph._track.__code__: "edge index",
    rdflib.Graph.__init__.__code__: "rdf graph",
}
_INIT = BaseModel.__init__.__code__


@contextmanager
def counted() -> Iterator[Counter[str]]:
    """Count, on this thread, the calls that the events' path and the RDF dataset make."""
    found: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code is _INIT:
            if isinstance(frame.f_locals.get("self"), NewEvent):
                found["event from a row"] += 1
        elif code in _WATCHED:
            found[_WATCHED[code]] += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield found
    finally:
        sys.setprofile(previous)


def _history(engine: Engine, clock: FrozenClock) -> None:
    """Mei's memory: restated, changed, retracted, confirmed and expired facts, signals, a
    key frozen by a strong conflict (its review open)."""
    say = {"user_id": "mei", "source": "profile", "provenance": CONSENT}
    engine.ingest({**say, "domain": "health", "key": "timezone", "value": "Asia/Shanghai"})
    for age in (2, 3, 3):
        engine.ingest({**say, "domain": "health", "key": "child.age", "value": age})
    engine.ingest({**say, "domain": "health", "key": "medical.conditions",
                   "value": ["condition:asthma"]})  # fmt: skip
    for airline in ("airline:MU", "airline:CA", "airline:MU"):
        engine.ingest({**say, "domain": "travel", "key": "airline.preferred", "value": airline,
                       "source": "dialogue", "change": True})  # fmt: skip
    engine.signal("mei", "travel", "airline.preferred", "airline:MU", "mention")
    engine.signal("mei", "health", "medical.conditions", "condition:asthma", "mention")
    city = engine.ingest({**say, "domain": "travel", "key": "location.city",
                          "value": "city:beijing", "source": "dialogue"})  # fmt: skip
    engine.confirm("mei", city.fact_id)
    seat = engine.ingest({**say, "domain": "travel", "key": "seat.preference",
                          "value": "window", "source": "dialogue"})  # fmt: skip
    engine.retract("mei", seat.fact_id, "said by mistake")
    long_ago = (NIGHT - timedelta(days=5)).isoformat()
    engine.ingest({**say, "domain": "travel", "key": "travel.companions", "value": 2,
                   "source": "dialogue", "observed_at": long_ago})  # fmt: skip
    engine.expire_due("mei")
    for allergies, source in ((["allergen:peanut"], "profile"), ([], "system")):  # frozen
        engine.ingest({**say, "domain": "health", "key": "medical.allergies", "value": allergies,
                       "source": source})  # fmt: skip


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    clock = FrozenClock(NIGHT - timedelta(hours=1))
    with Engine.open(path, clock=clock, config=CONFIG) as engine:
        _history(engine, clock)
    return path


def _cold_decision(path: Path) -> tuple[Engine, Counter[str], Any]:
    """A fresh engine over ``path`` (rules compiled), and one decision for Mei, not resident."""
    engine = Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG)
    engine.decide("nobody", "health", FEVER)  # rules compiled, nobody's graph read
    assert engine.projections.users() == ["nobody"]
    with counted() as found:
        decision = engine.decide("mei", "health", FEVER)
    return engine, found, decision


def test_the_counter_sees_each_part_of_the_events_path() -> None:
    with counted() as found:
        memory_events.stored_event("s", "e", "u", 1, "fact.asserted", None, None, None, {}, NIGHT)
        Event(event_id="e", type="note.saved", user_id="u", domain=None, payload={},
              recorded_at=NIGHT, seq=1, version=1)  # fmt: skip
        rdflib.Graph()
    assert found == {"event from a row": 2, "rdf graph": 1}


def test_a_cold_decision_folds_rows_and_builds_no_event_rdf_graph_or_edge_index(
    tmp_path: Path,
) -> None:
    path = _store(tmp_path)
    engine, found, decision = _cold_decision(path)
    with engine:
        assert row_stream(engine.store) is not None
        assert decision.result.reason_codes == ("ASTHMA_CHILD_NIGHT_FEVER",)
        events = engine.read_events("mei")
        assert len(events) > 15
        # only the review queue's events are built whole (the review index folds them)
        reviewed = [e for e in events if e.type.value in ("key.frozen", "review.resolved")]
        assert len(reviewed) == 1
        assert found == {"event from a row": len(reviewed)}, (
            f"a cold decision ran the events' path or built RDF: {found}"
        )
        with counted() as exported:
            engine.graph("mei", "travel", fmt="turtle")  # export builds both, on demand
        assert exported["rdf graph"] > 0
        assert exported["edge index"] > 0


def test_the_events_path_is_what_the_counter_would_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the store's rows hidden, the same decision folds events: each one is counted."""
    path = _store(tmp_path)
    monkeypatch.delattr(SqliteEventStore, "read_rows")
    engine, found, decision = _cold_decision(path)
    with engine:
        assert row_stream(engine.store) is None
        events = len(engine.read_events("mei"))
        assert found["event from a row"] >= events
        assert found["event folded"] == events
        assert decision.result.reason_codes == ("ASTHMA_CHILD_NIGHT_FEVER",)


def _everything(path: Path) -> list[Any]:
    engine, _, decision = _cold_decision(path)
    with engine:
        explained = engine.explain(decision.decision_id)
        read: list[Any] = [decision.model_dump(exclude={"timings"}), explained]
        for domain in ("health", "travel"):
            read.append(engine.edges("mei", domain))
            read.append(engine.graph("mei", domain))
            read.append(engine.graph("mei", domain, fmt="turtle"))
        read.append([f.model_dump() for f in engine.memory("mei").facts.values()])
        read.append(engine.projections.reviews("mei"))
        medication = engine.decide("mei", "health", {"allergen": "allergen:peanut"},
                                   decision="medication")  # fmt: skip
        read.append(medication.model_dump(exclude={"timings"}))
        read.append(engine.replay(decision.decision_id).reproduced)
        return read


def test_rows_and_events_give_the_same_decision_explanation_and_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rows").mkdir()
    (tmp_path / "events").mkdir()
    by_rows = _everything(_store(tmp_path / "rows"))
    path = _store(tmp_path / "events")
    with monkeypatch.context() as patch:
        patch.delattr(SqliteEventStore, "read_rows")
        by_events = _everything(path)
    assert by_rows == by_events
    assert by_rows[-1] is True


def _folds(engine: Engine, user: str) -> Callable[[], UserGraph]:
    store = row_stream(engine.store)
    assert store is not None

    def fold() -> UserGraph:
        graph = engine.setup.new_graph(user)
        graph.fold_rows(store.read_rows(user), store.row_event)
        return graph

    return fold


def test_rows_of_another_user_are_refused(tmp_path: Path) -> None:
    path = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        store = row_stream(engine.store)
        assert store is not None
        rows = store.read_rows("mei")
        graph = engine.setup.new_graph("bob")
        with pytest.raises(ValueError, match="about another user"):
            graph.fold_rows(rows, store.row_event)
        assert _folds(engine, "mei")().memory.facts == engine.memory("mei").facts



@pytest.mark.parametrize("path_taken", ["rows", "events"])
def test_users_loaded_one_after_another_each_keep_their_reviews_from_their_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path_taken: str
) -> None:
    """A server reads many users before it writes or decides for one of them again: each
    user's review index comes from what its load read, never from reading its history again
    (it did for all but the last user loaded, a cost that grew with each user's history)."""
    path = _store(tmp_path)
    with Engine.open(path, clock=FrozenClock(NIGHT - timedelta(minutes=30)),
                     config=CONFIG) as engine:  # fmt: skip
        for user in ("li", "wen"):
            engine.ingest({"user_id": user, "domain": "health", "key": "child.age", "value": 4,
                           "source": "profile", "provenance": CONSENT})  # fmt: skip
    if path_taken == "events":
        monkeypatch.delattr(SqliteEventStore, "read_rows")
    with Engine.open(path, clock=FrozenClock(NIGHT), config=CONFIG) as engine:
        for user in ("mei", "li", "wen"):
            engine.user_graph(user)  # loaded; its reviews not asked for yet
        with counted() as found:
            decision = engine.decide("mei", "health", FEVER)
            engine.decide("li", "health", FEVER)
        assert decision.result.reason_codes == ("ASTHMA_CHILD_NIGHT_FEVER",)
        assert found["event from a row"] == 0, f"a user's history was read again: {found}"
        whole: list[str] = []  # a write's reads of a stream from its start
        read_stream = engine.store.read_stream

        def watched(user_id: str, *args: Any, **kwargs: Any) -> list[Event]:
            if kwargs.get("after_version") is None:
                whole.append(user_id)
            return read_stream(user_id, *args, **kwargs)

        monkeypatch.setattr(engine.store, "read_stream", watched)
        engine.ingest({"user_id": "wen", "domain": "health", "key": "child.age", "value": 5,
                       "source": "profile", "provenance": CONSENT})  # fmt: skip
        assert whole == []
        # the index is the one a fresh read gives: Mei's frozen key is still open for review
        reviews = engine.projections.reviews("mei")
        assert [(r.key, r.status.value) for r in reviews] == [("medical.allergies", "open")]
        assert reviews == list(reviews_from(engine.read_events("mei")).values())
