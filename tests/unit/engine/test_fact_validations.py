"""A write validates no fact again, and the projections hold what the log gives back.

The writer builds the new fact from the validated observation and the checks' verdict,
without running ``Fact``'s validator; the freeze check's preview and the fold of the append
read the event's payload back without validating it again (``events.stored``), and the fold
of the log holds the same facts, down to their ``repr``, as the projections a write left.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.engine.facts import _dump
from memkg.events.projection import UserMemory
from support.observations import CONSENTED, T0, obs
from support.validations import Validations


def _engine(store: str, tmp_path: Path) -> Engine:
    clock = FrozenClock(T0)
    return Engine(clock=clock) if store == "memory" else Engine.open(tmp_path / "m.db", clock=clock)


def _history(engine: Engine, size: int) -> None:
    """``size`` writes of three keys, then two disagreeing claims of ``airline.preferred``."""
    keys = ["seat.preference", "cabin.class", "airline.preferred"]
    values = {
        "seat.preference": "aisle",
        "cabin.class": "economy",
        "airline.preferred": "airline:CZ",
    }
    for index in range(size):
        key = keys[index % 3]
        engine.ingest(obs(key=key, value=values[key], source="behavior"))
        engine.clock.advance(timedelta(minutes=5))  # type: ignore[attr-defined]
    engine.ingest(obs(value="airline:MU", source="behavior"))
    engine.ingest(obs(value="airline:CA", source="dialogue", confidence=0.5))


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("history", [0, 30, 300])
def test_a_write_validates_no_fact_whatever_the_users_history(
    store: str, history: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(store, tmp_path)
    _history(engine, history)
    engine.user_graph("u1")  # the user's fold resident, as after any write
    validations = Validations(monkeypatch)
    result = engine.ingest(obs(value="airline:SQ", source="profile", confidence=0.95))
    assert engine.memory("u1").seq == result.seq + 1  # the preview saw it: the key froze
    assert validations.count == 0
    assert engine.memory("u1").facts[result.fact_id].seq == result.seq
    assert engine.user_graph("u1").memory.facts[result.fact_id].seq == result.seq


def test_a_turn_instruction_validates_neither_of_its_two_facts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = Engine(clock=FrozenClock(T0))
    _history(engine, 30)
    validations = Validations(monkeypatch)
    turn = {"scope": "turn", "session_id": "s1", "provenance": {"source_ref": "turn-3"}}
    engine.ingest(obs(value="airline:SQ", **turn))
    assert validations.count == 0  # neither the instruction nor its session note
    notes = [f for f in engine.memory("u1").current() if f.scope.value == "session"]
    assert [f.value for f in notes] == ["airline:SQ"]


def _varied() -> list[dict[str, Any]]:
    """Writes whose facts differ in every way a stored payload could read back differently."""
    plus_two = timezone(timedelta(hours=2))
    return [
        obs(value="airline:MU"),
        obs(
            value="airline:CA",
            source="behavior",
            observed_at=datetime(2026, 4, 30, 8, 0, tzinfo=plus_two),
        ),
        obs(value="airline:SQ", observed_at="2026-04-29T10:15:30.250+05:30"),
        obs(
            key="airline.avoided",
            value=["airline:MU", "airline:CZ"],
            provenance={"source_ref": "dialogue_turn_12", "purpose": "booking"},
        ),
        obs(key="travel.companions", value=2, observed_at=datetime(2026, 5, 1, 7, tzinfo=UTC)),
        obs(key="seat.preference", value="window", context={"trip_type": "business"}),
        obs(key="cabin.class", value="business", scope="session", session_id="s1"),
        obs(
            key="seat.preference",
            value="aisle",
            scope="turn",
            session_id="s1",
            provenance={"source_ref": "turn-1"},
        ),
        obs(key="loyalty.number", value="AB123456", **CONSENTED),
        obs(user_id="u2", key="airline.preferred", value="airline:MU", change=True),
        obs(user_id="u2", key="airline.preferred", value="airline:CA", change=True),
    ]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_the_projections_a_write_leaves_are_the_fold_of_the_log(store: str, tmp_path: Path) -> None:
    engine = _engine(store, tmp_path)
    for made in _varied():
        engine.ingest(made)
        engine.clock.advance(timedelta(minutes=1))  # type: ignore[attr-defined]
    for user in ("u1", "u2"):
        folded = UserMemory.from_events(user, engine.store.read_stream(user)).facts
        for live in (engine.memory(user).facts, engine.user_graph(user).memory.facts):
            assert repr(live) == repr(folded)  # types too: times, sources, values
            for fact_id, fact in live.items():
                assert fact.model_dump_json() == folded[fact_id].model_dump_json()
                assert fact.key is folded[fact_id].key  # shared text, as the fold shares it
    default = next(f for f in engine.memory("u1").facts.values() if f.provenance.source_ref is None)
    assert (
        default.provenance
        is UserMemory.from_events("u1", engine.store.read_stream("u1")).facts[default.id].provenance
    )  # one shared empty provenance


def test_memory_keeps_the_stored_value_not_the_callers_object() -> None:
    engine = Engine(clock=FrozenClock(T0))
    avoided = ["airline:MU"]
    result = engine.ingest(obs(key="airline.avoided", value=avoided))
    avoided.append("airline:CA")  # the caller reuses its list
    assert engine.memory("u1").facts[result.fact_id].value == ["airline:MU"]
    assert engine.user_graph("u1").memory.facts[result.fact_id].value == ["airline:MU"]


def test_a_new_facts_payload_is_its_json_dump_key_for_key_and_type_for_type() -> None:
    engine = Engine(clock=FrozenClock(T0))
    for made in _varied():
        engine.ingest(made)
        engine.clock.advance(timedelta(minutes=1))  # type: ignore[attr-defined]
    facts = [f for user in ("u1", "u2") for f in engine.memory(user).facts.values()]
    odd = timezone(timedelta(hours=5, minutes=30, seconds=15))
    changes: list[dict[str, Any]] = [
        {"value": 1.5}, {"value": True}, {"value": None}, {"value": 10**30}, {"value": 7},
        {"value": {"a": [1, (2, 3)]}}, {"value": float("nan")}, {"value": "x" * 300},
        {"valid_until": datetime(2026, 5, 2, 1, 2, 3, 45, tzinfo=odd)},
        {"observed_at": datetime(2026, 5, 1, 9, 30)}, {"confidence": 1},
        {"recorded_at": datetime(2026, 5, 1, 9, 30, 0, 120000, tzinfo=UTC)},
        {"context": {"trip_type": "leisure"}}, {"session_id": "s9", "supersedes": "fact_1"},
        {"provenance": facts[0].provenance.model_copy(update={"consent_granted": True})},
    ]  # fmt: skip
    for fact in facts + [facts[0].model_copy(update=change) for change in changes]:
        expected = fact.model_dump(
            mode="json", exclude={"seq", "superseded_by", "supersede_reason", "status_reason"}
        )
        assert repr(_dump(fact)) == repr(expected)
