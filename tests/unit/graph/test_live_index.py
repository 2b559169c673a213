"""A user's live claims are read from the live index: their cost is the live facts, not the
history a long-talking user leaves behind."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from memkg import Engine
from memkg.engine import IngestResult
from memkg.events.projection import UserMemory
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import LIVE_STATUSES, FactStatus, Scope, spent

Observe = Callable[..., IngestResult]
SEATS = ["window", "aisle", "middle"]


class _NoScan(dict[str, Any]):
    """A fact table that answers lookups by id and refuses to be walked."""

    def _walked(self, *_: object) -> Any:
        raise AssertionError("the whole fact table was walked")

    values = items = keys = __iter__ = _walked  # type: ignore[assignment]


@pytest.fixture
def talked(engine: Engine, observe: Observe) -> Engine:
    """A user who restated their seat 60 times from two sources, with one retracted fact and
    a cabin class: two live seat claims, one live cabin claim, the rest history."""
    for n in range(60):
        observe("u1", "travel", "seat.preference", SEATS[n % 3],
                source="dialogue" if n % 2 else "behavior")  # fmt: skip
    observe("u1", "travel", "cabin.class", "business")
    gone = observe("u1", "travel", "airline.preferred", "airline:MU")
    engine.retract("u1", gone.fact_id, reason="wrong airline")
    return engine


def test_live_claims_are_read_without_walking_the_history(talked: Engine) -> None:
    graph = talked.user_graph("u1")
    memory = graph.memory
    every = sorted(memory.facts.values(), key=lambda f: (f.seq, f.id))
    expected = [f for f in every if f.status in LIVE_STATUSES]
    assert len(every) == 62 and len(expected) == 3  # the retracted one and history drop out
    claims = [c.fact for c in graph.claims_of("travel")]
    current = memory.current("travel")

    memory.facts = _NoScan(memory.facts)
    graph._claims.clear()  # type: ignore[attr-defined]
    assert memory.live("travel") == expected
    assert memory.live(None) == expected and memory.live("health") == []
    assert [c.fact for c in graph.claims_of("travel")] == claims == expected
    assert [fact for fact, _ in graph.claims("travel")] == expected
    assert memory.current("travel") == current


def test_a_fixture_memory_given_its_facts_is_scanned(talked: Engine) -> None:
    """A memory handed its facts without folding them (a rule case's) has no live index:
    ``live`` falls back to filtering every fact, with the same answer."""
    folded = talked.memory("u1")
    given = UserMemory("u1")
    given.facts = dict(folded.facts)
    assert given.live("travel") == folded.live("travel")
    keys = {"seat.preference", "cabin.class"}
    for session in (None, "s1"):
        assert given.unsuperseded_in("travel", keys, session) == folded.unsuperseded_in(
            "travel", keys, session
        ) != []


def test_a_keys_bearing_claims_and_the_unsuperseded_facts_are_read_without_walking(
    talked: Engine, observe: Observe
) -> None:
    """What a read of a key lines up (``bearing``) and what a decision reads of a domain
    (``unsuperseded``) come from indexes worked out on the first read and kept as events
    arrive from then on: equal to filtering every fact, without walking the table again,
    after a write as before it."""
    memory = talked.memory("u1")
    memory.bearing("travel", "seat.preference")  # the first read works the indexes out

    def scanned() -> tuple[list[Any], list[Any]]:
        every = list(memory.facts.values())
        seats = [f for f in every if f.key == "seat.preference" and not spent(f)]
        return seats, [f for f in every if f.status is not FactStatus.SUPERSEDED]

    for _ in range(2):
        seats, unsuperseded = scanned()
        # of 60 seat claims, the 2 that hold; those and the cabin and the retracted airline
        assert len(seats) == 2 and len(unsuperseded) == 4
        table = memory._facts  # type: ignore[attr-defined]
        memory._facts = _NoScan(table)  # type: ignore[attr-defined]
        try:
            assert memory.bearing("travel", "seat.preference") == seats
            assert memory.unsuperseded("travel") == unsuperseded
            assert memory.unsuperseded("health") == []
        finally:
            memory._facts = table  # type: ignore[attr-defined]
        observe("u1", "travel", "seat.preference", "aisle", source="dialogue")  # then again


def test_a_spent_fact_superseded_again_by_a_change_is_read_again(talked: Engine) -> None:
    """No command supersedes a superseded fact, but a log may (an import): superseded again by
    a change that holds, a spent fact can be listed again, and the index takes it back, in
    its place."""
    memory = talked.memory("u1")
    memory.bearing("travel", "seat.preference")
    every = list(memory.facts.values())
    gone = next(f for f in every if f.key == "seat.preference" and spent(f))
    holds = next(f for f in every if f.key == "seat.preference" and f.status in LIVE_STATUSES)
    talked.journal.append("u1", [
        NewEvent(event_id="evt_again", type=EventType.FACT_SUPERSEDED, user_id="u1",
                 domain="travel", payload={"fact_id": gone.id, "by_fact_id": holds.id,
                                           "reason": "correction"},
                 recorded_at=gone.recorded_at, fact_id=gone.id)
    ])  # fmt: skip
    again = memory.fact(gone.id)
    assert again is not None and not spent(again)
    expected = [f for f in memory.facts.values() if f.key == "seat.preference" and not spent(f)]
    assert gone.id in [f.id for f in expected]
    assert memory.bearing("travel", "seat.preference") == expected


def _in_scope(fact: Any, session_id: str | None) -> bool:
    return fact.scope.value == "global" or (
        session_id is not None and fact.session_id == session_id
    )


@pytest.mark.parametrize("seed", [2, 13])
def test_a_scopes_claims_are_read_from_their_own_index(engine: Engine, seed: int) -> None:
    """A write reads its key's claims of its own scope (``live_claims_in``), a read in a
    session the key's long-term facts and the session's (``bearing_in``): both kept as events
    arrive, equal to filtering what ``live_claims`` and ``bearing`` read, whatever was
    written, restated, changed, retracted or superseded again before."""
    rng = random.Random(seed)
    sessions = [None, "s1", "s2", "s3"]
    memory = engine.memory("u1")
    memory.bearing_in("travel", "seat.preference", None)  # worked out, then kept
    memory.live_claims_in("travel", "seat.preference", Scope.GLOBAL, None)
    for step in range(300):
        session = rng.choice(sessions)
        draw = rng.random()
        live = memory.live_claims("travel", "seat.preference")
        if draw < 0.1 and live:
            engine.retract("u1", rng.choice(live).id, reason="withdrawn")
        elif draw < 0.13 and live:
            gone = rng.choice([f for f in memory.facts.values() if spent(f)] or [None])
            if gone is not None:  # what no command does, but a log may: superseded again
                engine.journal.append("u1", [NewEvent(
                    event_id=f"evt_again_{step}", type=EventType.FACT_SUPERSEDED,
                    user_id="u1", domain="travel", recorded_at=gone.recorded_at,
                    payload={"fact_id": gone.id, "by_fact_id": live[0].id,
                             "reason": "correction"}, fact_id=gone.id,
                )])  # fmt: skip
        else:
            scope = {}
            if session is not None:
                scope = ({"scope": "session", "session_id": session} if rng.random() < 0.7
                         else {"scope": "turn", "session_id": session,
                               "provenance": {"source_ref": f"t{step % 3}"}})  # fmt: skip
            key = "seat.preference" if rng.random() < 0.8 else "cabin.class"
            value = rng.choice(SEATS if key == "seat.preference" else ["economy", "business"])
            engine.ingest({"user_id": "u1", "domain": "travel", "key": key,
                           "value": value, "confidence": 0.9,
                           "source": rng.choice(["dialogue", "behavior"]),
                           "change": rng.random() < 0.2, **scope})  # fmt: skip
        assert engine.memory("u1") is memory
        every = memory.bearing("travel", "seat.preference")
        live = memory.live_claims("travel", "seat.preference")
        for read in sessions:
            assert memory.bearing_in("travel", "seat.preference", read) == [
                f for f in every if _in_scope(f, read)
            ]
            if read is not None:
                assert memory.bears_in_session("travel", "seat.preference", read) == any(
                    f.scope.value != "global" and f.session_id == read for f in every
                )
        unsuperseded = memory.unsuperseded("travel")
        for read in sessions:
            keys = {"seat.preference", "cabin.class"}
            assert memory.unsuperseded_in("travel", sorted(keys), read) == [
                f for f in unsuperseded if f.key in keys and _in_scope(f, read)
            ]
        for scope, read in [(Scope.GLOBAL, None), *((Scope.SESSION, s) for s in sessions[1:])]:
            assert memory.live_claims_in("travel", "seat.preference", scope, read) == [
                f for f in live
                if (f.scope is Scope.GLOBAL) == (scope is Scope.GLOBAL)
                and (scope is Scope.GLOBAL or f.session_id == read)
            ]
    assert any(f.scope is Scope.TURN for f in live) or any(
        f.scope is Scope.TURN for f in memory.facts.values()
    )
