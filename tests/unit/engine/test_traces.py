"""Per-request traces: each ``render_profile``, ``recall`` and ``decide`` leaves a trace of what
it considered, scored, dropped and used, found by id for the retention, bounded, and erased
with the user."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, InvalidOperation, NotFound, StoreError
from memkg.config import EngineConfig
from memkg.engine.tracing import recall_trace
from memkg.events.memory import MemoryEventStore
from memkg.events.postgres import PostgresEventStore
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import Companion, EventStore
from memkg.lifecycle.recall import RecallCandidate, RecallResult, Scores
from memkg.model.event import EventType, NewEvent
from memkg.model.settings import RecallWeights
from memkg.model.trace import MAX_ITEMS, Trace
from memkg.trace import MemoryTraceStore, PostgresTraceStore, SqliteTraceStore, TraceStore
from support.observations import CONSENTED, T0, obs

SECRET = "Quokkamycin-7731"
AUDIT = {"provenance": {**CONSENTED["provenance"], "audit_log_id": "aud-77"}}


def _traveller(engine: Engine) -> None:
    engine.ingest(obs(value="airline:MU"))
    engine.ingest(obs(key="seat.preference", value="aisle"))
    engine.ingest(obs(key="airline.avoided", value=["airline:CZ"], **AUDIT))


def test_a_profile_trace_says_what_went_in_and_what_was_dropped(engine: Engine) -> None:
    _traveller(engine)
    full = engine.render_profile("u1", "travel")
    assert full.trace_id is not None
    trace = engine.trace(full.trace_id)
    assert trace.operation == "render_profile" and trace.user_id == "u1"
    assert trace.output["sha256"] == hashlib.sha256(full.text.encode()).hexdigest()
    assert {i.ref for i in trace.items if i.used} == {i.ref for i in full.included}
    assert trace.counts["dropped"] == 0
    tight = engine.render_profile("u1", "travel", budget=full.tokens - 1)
    cut = engine.trace(tight.trace_id or "")
    assert tight.dropped and cut.counts["dropped"] == len(tight.dropped)
    dropped = [i for i in cut.items if not i.used]
    assert {i.ref for i in dropped} == {i.ref for i in tight.dropped}
    assert all(i.reason and "token budget" in i.reason for i in dropped)
    assert "airline:MU" not in cut.model_dump_json()  # ids and scores, never values


def test_a_recall_trace_holds_every_candidate_with_its_scores(engine: Engine) -> None:
    _traveller(engine)
    found = engine.recall("u1", "which airline do I prefer", k=1, domain="travel")
    trace = engine.trace(found.trace_id or "")
    query = "which airline do I prefer"
    assert trace.operation == "recall"
    assert trace.request == {"query_sha256": hashlib.sha256(query.encode()).hexdigest(),
                             "query_chars": len(query), "k": 1}  # fmt: skip
    assert "airline do I" not in trace.model_dump_json()  # the query only as its digest
    assert [i.ref for i in trace.items if i.used] == list(found.injected)
    assert trace.counts["considered"] == len(found.candidates)
    for item in trace.items:
        candidate = next(c for c in found.candidates if c.ref == item.ref)
        assert item.scores["total"] == candidate.scores.total == item.score
        assert item.used == candidate.injected and (item.reason is None) == item.used
    assert trace.output == {"injected": list(found.injected), "semantic_index": "bm25"}


def test_a_hostile_query_is_kept_bounded(engine: Engine) -> None:
    _traveller(engine)
    query = "airline " + "x" * 1_990  # as long as recall takes (``recall.query`` past it)
    trace = engine.trace(engine.recall("u1", query, domain="travel").trace_id or "")
    assert set(trace.request) == {"query_sha256", "query_chars", "k"}
    assert len(trace.model_dump_json()) < 4_000
    with pytest.raises(InvalidOperation):
        engine.recall("u1", "airline " + "x" * 200_000, domain="travel")


def test_a_trace_lists_at_most_max_items_and_counts_the_rest() -> None:
    scores = Scores(relevance=0.0, semantic=0.0, recency=1.0, type_match=0.5, confidence=0.5,
                    total=0.3)  # fmt: skip
    many = tuple(
        RecallCandidate(
            ref=f"fact_{i:05d}", kind="preference", text="t", entities=(), scores=scores,
            injected=False,
        )
        for i in range(3 * MAX_ITEMS)
    )
    result = RecallResult(query="q", query_entities=(), weights=RecallWeights(),
                          semantic_index="none", candidates=many, injected=())  # fmt: skip
    trace = recall_trace("trc_1", T0, "u1", None, query="q", k=5, result=result)
    assert len(trace.items) == MAX_ITEMS and trace.unlisted == 2 * MAX_ITEMS
    assert trace.counts == {"considered": 3 * MAX_ITEMS, "used": 0, "dropped": 3 * MAX_ITEMS}
    assert trace.items[0].reason == "too little match with the query"


def test_a_decision_carries_its_trace_and_still_replays(engine: Engine) -> None:
    _traveller(engine)
    made = engine.decide("u1", "travel", {"airline": "airline:CZ"})
    assert made.trace_id is not None
    assert engine.decision_log.get(made.decision_id).trace_id == made.trace_id
    assert engine.replay(made.decision_id).reproduced
    trace = engine.trace(made.trace_id)
    assert trace.operation == "decide" and trace.output["decision_id"] == made.decision_id
    assert trace.output["action"] == made.result.action == "suggest_other_airline"
    used = {i.ref for i in trace.items if i.used}
    [avoided] = [f for f in engine.facts("u1") if f.key == "airline.avoided"]
    assert f"fact:{avoided.id}" in used
    assert trace.request["context"] == {"airline": "airline:CZ"}


def test_traces_expire_after_the_retention(clock: FrozenClock) -> None:
    config = EngineConfig(trace_retention=timedelta(hours=1))
    engine = Engine(clock=clock, config=config)
    _traveller(engine)
    first = engine.render_profile("u1", "travel").trace_id or ""
    clock.advance(timedelta(minutes=59))
    assert engine.trace(first).trace_id == first
    clock.advance(timedelta(minutes=2))
    with pytest.raises(NotFound) as gone:
        engine.trace(first)
    assert gone.value.code == "trace.not_found"
    engine.render_profile("u1", "travel")  # a new trace sweeps the expired ones out
    with pytest.raises(NotFound):
        engine.tracer.traces.get(first)


def test_a_zero_retention_keeps_no_trace(clock: FrozenClock) -> None:
    engine = Engine(clock=clock, config=EngineConfig(trace_retention=timedelta(0)))
    _traveller(engine)
    assert engine.render_profile("u1", "travel").trace_id is None
    assert engine.recall("u1", "airline").trace_id is None
    assert engine.decide("u1", "travel", {"airline": "airline:CZ"}).trace_id is None


def test_erasure_takes_the_users_traces(engine: Engine) -> None:
    _traveller(engine)
    engine.ingest(obs(user_id="other", value="airline:CA"))
    ids = [engine.render_profile("u1", "travel").trace_id,
           engine.recall("u1", "airline").trace_id,
           engine.decide("u1", "travel", {"airline": "airline:CZ"}).trace_id]  # fmt: skip
    kept = engine.render_profile("other", "travel").trace_id or ""
    receipt = engine.erase("u1")
    assert receipt.removed["traces"] == 3
    for trace_id in ids:
        with pytest.raises(NotFound):
            engine.trace(trace_id or "")
    assert engine.trace(kept).user_id == "other"


def test_erasure_by_audit_id_takes_the_traces_naming_those_facts(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=FrozenClock(T0)) as engine:
        _traveller(engine)
        [avoided] = [f.id for f in engine.facts("u1") if f.key == "airline.avoided"]
        citing = engine.decide("u1", "travel", {"airline": "airline:CZ"}).trace_id or ""
        shown = engine.render_profile("u1", "travel").trace_id or ""  # shows the fact too
        other = engine.render_profile("u1", "health").trace_id or ""  # shows nothing of it
        files = [db, db.with_name(db.name + "-wal")]
        assert any(avoided.encode() in f.read_bytes() for f in files if f.exists())
        [receipt] = engine.erase_audit_id("aud-77")
        assert receipt.removed["traces"] == 2
        for gone in (citing, shown):
            with pytest.raises(NotFound):
                engine.trace(gone)
        assert engine.trace(other).trace_id == other
        for file in files:
            data = file.read_bytes() if file.exists() else b""
            assert avoided.encode() not in data and citing.encode() not in data, file


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def beside(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[EventStore, TraceStore]]:
    """A trace store beside an event store in which users ``u`` and ``v`` have a stream."""
    events: EventStore
    made: TraceStore
    if request.param == "memory":
        events = MemoryEventStore()
        made = MemoryTraceStore(events.stream_mark)
    elif request.param == "sqlite":
        events = SqliteEventStore(tmp_path / "t.db")
        made = SqliteTraceStore(tmp_path / "t.db")
    else:
        dsn, schema = request.getfixturevalue("postgres_dsn"), request.getfixturevalue("pg_schema")
        events = PostgresEventStore(dsn, schema=schema)
        made = PostgresTraceStore(dsn, schema=schema)
    for user in ("u", "v", "w"):
        events.append(user, [_event(user)])
    yield events, made
    made.close()
    events.close()


def _event(user: str) -> NewEvent:
    return NewEvent(event_id=f"evt_{user}", type=EventType.NOTE_SAVED, user_id=user,
                    domain="travel", payload={"note_id": f"n_{user}"}, recorded_at=T0)  # fmt: skip


def _trace(trace_id: str, user: str, minutes: int, ref: str = "fact:f_1") -> Trace:
    return Trace.model_validate({
        "trace_id": trace_id, "operation": "recall", "user_id": user,
        "created_at": T0 + timedelta(minutes=minutes),
        "items": [{"ref": ref, "kind": "preference", "used": True, "score": 0.5}],
    })  # fmt: skip


def test_store_contract(beside: tuple[EventStore, TraceStore]) -> None:
    store = beside[1]
    a, b, c = _trace("t_a", "u", 0), _trace("t_b", "u", 10, "fact:f_2"), _trace("t_c", "v", 20)
    for trace in (a, b, c):
        assert store.put(trace, 0)
    assert store.get("t_b") == b
    with pytest.raises(Exception, match="already stored"):
        store.put(a, 0)
    assert store.erase_citing("u", ["f_2", ""]) == 1
    with pytest.raises(NotFound):
        store.get("t_b")
    assert store.expire(T0 + timedelta(minutes=5)) == 1  # t_a
    assert store.erase_user("v") == 1
    for gone in ("t_a", "t_c"):
        with pytest.raises(NotFound):
            store.get(gone)


def test_erasure_by_fact_takes_only_the_traces_that_cite_the_fact_as_a_whole_id(
    beside: tuple[EventStore, TraceStore],
) -> None:
    """``f_1`` is not cited by a trace of ``f_10`` nor of ``f_1-b``: only whole ids count."""
    store = beside[1]
    cited, longer, hyphen = (_trace("t_1", "w", 0, "fact:f_1"), _trace("t_10", "w", 1, "fact:f_10"),
                             _trace("t_1b", "w", 2, "fact:f_1-b"))  # fmt: skip
    for trace in (cited, longer, hyphen):
        assert store.put(trace, 0)
    assert store.erase_citing("w", ["f_1"]) == 1
    assert store.get("t_10") == longer and store.get("t_1b") == hyphen
    with pytest.raises(NotFound):
        store.get("t_1")


def test_a_trace_is_stored_only_while_its_user_s_stream_is_as_the_read_saw_it(
    beside: tuple[EventStore, TraceStore],
) -> None:
    """Contract item 1: no stream (never written, or erased), or a purge or erasure since
    the read, and the trace is not stored."""
    events, store = beside
    seen = events.stream_mark("u")[1]
    assert not store.put(_trace("t_nobody", "nobody", 0), seen)
    events.erase_subject("v", erasure_id="erasure_1", at_iso=T0.isoformat())
    assert not store.put(_trace("t_v", "v", 0), seen)  # v's stream is gone
    assert not store.put(_trace("t_u", "u", 0), seen)  # a purge ran since u's read
    assert store.put(_trace("t_u", "u", 0), events.stream_mark("u")[1])
    for gone in ("t_nobody", "t_v"):
        with pytest.raises(NotFound):
            store.get(gone)


def test_an_erasure_removes_the_traces_in_its_own_transaction(
    beside: tuple[EventStore, TraceStore],
) -> None:
    events, store = beside
    assert store.put(_trace("t_w", "w", 0), events.stream_mark("w")[1])
    assert isinstance(store, Companion)
    counts = events.erase_subject("w", erasure_id="erasure_2", at_iso=T0.isoformat(),
                                  companions=[store])  # fmt: skip
    assert counts.companions == (1,)
    with pytest.raises(NotFound):
        store.get("t_w")


class _FullDisk(MemoryTraceStore):
    def put(self, trace: Trace, seen: int) -> bool:
        raise StoreError("trace store: database or disk is full", code="store.full")


def test_a_trace_the_store_cannot_take_leaves_the_answer_without_one(engine: Engine) -> None:
    _traveller(engine)
    engine.tracer.traces = _FullDisk()
    profile = engine.render_profile("u1", "travel")
    assert profile.trace_id is None and profile.included
    assert engine.recall("u1", "airline").trace_id is None


def test_a_recall_trace_keeps_a_long_session_id_bounded(engine: Engine) -> None:
    """A session id the caller made long (MCP takes it as given) is kept as its digest, as a
    profile's is: a trace does not grow with what a read-only caller sends."""
    _traveller(engine)
    session = "s" * 100_000
    found = engine.recall("u1", "airline", domain="travel", session_id=session)
    assert found.trace_id is not None
    kept = engine.trace(found.trace_id)
    assert kept.request["session_id"]["bytes"] == len(session) + 2
    assert len(kept.model_dump_json()) < 5_000


def test_an_answer_over_http_or_mcp_lists_the_injected_and_the_ten_best_others(
    engine: Engine,
) -> None:
    for n in range(30):
        assert engine.save_memory_note("u1", "travel", f"Likes lounge number {n} at hubs",
                                       "global").saved  # fmt: skip
    found = engine.recall("u1", "lounge", k=3, domain="travel")
    shown = found.shown()
    assert len(found.candidates) == 30 and len(shown.candidates) == 13
    assert [c.ref for c in shown.candidates] == [c.ref for c in found.candidates][:13]
    assert {c.ref for c in shown.candidates if c.injected} == set(found.injected)
    assert shown.trace_id == found.trace_id
