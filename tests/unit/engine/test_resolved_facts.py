"""``resolved_facts`` (what ``render_profile`` shows each turn) resolves every key slot through
the path ``resolve`` and decisions take, reading the keys' claims that can be listed; it is
held equal here to the reader resolving every fact of the user from scratch
(``MemoryReader.resolve_domain``), over a history with every kind of supersession, scope,
context slot, retraction, confirmation, frozen conflict and signal: in memory, and for a user
restored from a snapshot with history held unread."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.model.event import EventType, NewEvent
from support.observations import T0

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
READS = [{}, {"session_id": "s1"}, {"session_id": "s1", "turn": "turn_3"},
         {"session_id": "s1", "turn": "turn_2"},
         {"session_id": "s2", "language": "zh"}]  # fmt: skip


def _history(engine: Engine, clock: FrozenClock) -> None:
    def say(domain: str, key: str, value: Any, source: str = "dialogue", **more: Any) -> str:
        clock.advance(timedelta(minutes=7))
        made = engine.ingest({"user_id": "u1", "domain": domain, "key": key, "value": value,
                              "source": source, "provenance": {**CONSENT,
                              **more.pop("provenance", {})}, **more})  # fmt: skip
        return made.fact_id

    for n in range(30):  # restated: spent, but the last
        say("travel", "seat.preference", ["window", "aisle"][n % 2])
        say("travel", "seat.preference", "aisle", "behavior", confidence=0.6)
    say("travel", "seat.preference", "window", context={"trip_type": "business"})
    say("travel", "seat.preference", "middle", scope="session", session_id="s1")
    say("travel", "seat.preference", "aisle", scope="turn", session_id="s1",
        provenance={"source_ref": "turn_3"})  # fmt: skip
    # context slots only a session's note, or a turn's instruction, bears: read on their own
    # there alone (elsewhere, and in the session's later turns, the general slot answers)
    say("travel", "seat.preference", "window", scope="session", session_id="s2",
        context={"trip_type": "leisure"})  # fmt: skip
    say("travel", "seat.preference", "middle", scope="turn", session_id="s1",
        context={"trip_type": "family"}, provenance={"source_ref": "turn_2"})  # fmt: skip
    for airline in ("airline:MU", "airline:CA", "airline:MU"):  # explicit changes
        say("travel", "airline.preferred", airline, change=True)
    wrong = say("travel", "cabin.class", "first")
    fixed = say("travel", "cabin.class", "business", supersedes=wrong)  # a correction
    engine.retract("u1", fixed, "said by mistake")
    city = say("travel", "location.city", "city:beijing")
    engine.confirm("u1", city)
    engine.signal("u1", "travel", "airline.preferred", "airline:MU", "mention")
    say("travel", "travel.companions", 2, observed_at=(T0 - timedelta(days=400)).isoformat())
    say("health", "child.age", 4, "profile")
    for allergies, source in ((["allergen:peanut"], "profile"), ([], "system")):  # frozen
        say("health", "medical.allergies", allergies, source)


def _reference(engine: Engine, domain: str, **read: Any) -> list[str]:
    """Every fact of the user, resolved from scratch by the reader."""
    graph = engine.user_graph("u1")
    registry = engine.setup.registry
    specs = [s for k in registry.keys(domain) if (s := registry.spec(domain, k))]
    found = engine.setup.reader.resolve_domain(
        list(graph.memory.facts.values()), graph.claim_signals,
        engine.projections.reviews("u1", graph), specs, engine.clock.now(), user_id="u1", **read,
    )  # fmt: skip
    return [r.model_dump_json() for r in found]


def _compared(engine: Engine, clock: FrozenClock) -> int:
    slots = 0
    for step in (timedelta(0), timedelta(days=2), timedelta(days=90)):
        clock.advance(step)
        for domain in ("travel", "health"):
            for read in READS:
                got = [r.model_dump_json() for r in engine.resolved_facts("u1", domain, **read)]
                assert got == _reference(engine, domain, **read), (domain, read, step)
                slots += len(got)
    return slots


def test_resolved_facts_equal_the_reader_from_scratch() -> None:
    clock = FrozenClock(T0)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    _history(engine, clock)
    assert _compared(engine, clock) > 30


@pytest.mark.parametrize("kept", [True, False])
def test_resolved_facts_of_a_restored_user_equal_the_reader_from_scratch(
    tmp_path: Path, kept: bool
) -> None:
    clock = FrozenClock(T0)
    path = tmp_path / "m.db"
    with Engine.open(path, clock=clock, config=EngineConfig(shacl=False)) as engine:
        _history(engine, clock)
        if kept:
            assert engine.projections.keep_snapshot("u1")
    with Engine.open(path, clock=clock, config=EngineConfig(shacl=False)) as engine:
        found = [r.model_dump_json() for r in engine.resolved_facts("u1", "travel")]
        memory = engine.memory("u1")
        assert (memory.built < memory.count) is kept  # the history held unread, when kept
        assert found == _reference(engine, "travel")  # (which builds it)
        assert _compared(engine, clock) > 30


def test_a_key_whose_facts_no_read_lists_keeps_its_general_slot() -> None:
    """A key settled by a reviewer, whose facts were then all superseded by a migration (spent:
    no read lists them), still shows the reviewer's value, as ``resolve`` gives it."""
    clock = FrozenClock(T0)
    engine = Engine(clock=clock, config=EngineConfig(shacl=False))
    ids = []
    for allergies, source in ((["allergen:peanut"], "profile"), ([], "system")):  # frozen
        clock.advance(timedelta(minutes=7))
        ids.append(engine.ingest({"user_id": "u1", "domain": "health", "key": "medical.allergies",
                                  "value": allergies, "source": source,
                                  "provenance": CONSENT}).fact_id)  # fmt: skip
    (review,) = engine.projections.reviews("u1")
    engine.resolve_review(review.review_id, ["allergen:peanut"], "checked with the user")
    engine.journal.append("u1", [
        NewEvent(event_id=clock.new_id("evt"), type=EventType.FACT_SUPERSEDED, user_id="u1",
                 domain="health", payload={"fact_id": fact_id, "reason": "migration"},
                 recorded_at=clock.now(), fact_id=fact_id)
        for fact_id in ids
    ])  # fmt: skip
    assert engine.memory("u1").bearing("health", "medical.allergies") == []
    held = engine.resolve("u1", "health", "medical.allergies")
    assert held.value == ["allergen:peanut"]
    found = engine.resolved_facts("u1", "health")
    assert [r.model_dump_json() for r in found] == _reference(engine, "health")
    assert [r.value for r in found if r.key == "medical.allergies"] == [["allergen:peanut"]]
