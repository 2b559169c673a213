"""What a decision reads of each key is worked out once per state of the user's graph: a
second decision for an unchanged user reads no key's history again. Counted, never timed."""

from __future__ import annotations

from datetime import timedelta

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision

OFFERS = {"trip_type": "leisure"}


def _seat(engine: Engine, value: str, **fields: object) -> None:
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "seat.preference", "value": value,
                   "source": "dialogue", "confidence": 0.9, **fields})  # fmt: skip


def _offers(engine: Engine, **scope: str) -> Decision:
    return engine.decide("u1", "travel", OFFERS, decision="offers", **scope)


def _history(engine: Engine, clock: FrozenClock, restated: int) -> None:
    for index in range(restated):
        _seat(engine, ["window", "aisle"][index % 2])
        clock.advance(timedelta(minutes=1))
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "cabin.class", "value": "first",
                   "source": "dialogue", "context": {"trip_type": "leisure"}})  # fmt: skip


def test_a_second_decision_reads_no_keys_history_while_the_user_is_unchanged(
    engine: Engine, clock: FrozenClock
) -> None:
    _history(engine, clock, 40)
    memory = engine.memory("u1")
    before = memory.facts_read
    first = _offers(engine)
    read_first = memory.facts_read - before
    assert read_first >= 40  # every seat claim, superseded history included

    for scope in ({}, {"session_id": "s1"}, {"session_id": "s1", "turn": "t1"}):
        clock.advance(timedelta(seconds=1))
        before = memory.facts_read
        again = _offers(engine, **scope)
        assert memory.facts_read == before, scope
        assert again.explanation.memory[0].key == first.explanation.memory[0].key
        for node in again.explanation.memory:
            held = engine.resolve("u1", "travel", node.key, context=OFFERS, **scope)
            assert node.value == held.value, node.key
        assert engine.replay(again.decision_id).reproduced

    _seat(engine, "window")  # a write: the keys are read again, with it
    before = memory.facts_read
    after = _offers(engine)
    assert memory.facts_read - before == read_first + 1
    assert [m.value for m in after.explanation.memory if m.key == "seat.preference"] == ["window"]
    assert engine.replay(after.decision_id).reproduced
