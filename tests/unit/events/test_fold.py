"""Folding the whole log: per-user memories equal to each user's own fold, the collector paused."""

from __future__ import annotations

import gc
from collections.abc import Iterator

from memkg import Engine
from memkg.events.projection import UserMemory, collector_paused, fold_all
from memkg.model.event import Event
from memkg.model.fact import Fact


def _engine_with_history(engine: Engine) -> Engine:
    for n in range(30):
        engine.ingest({"user_id": f"u{n % 3}", "domain": "travel", "key": "seat.preference",
                       "value": ["window", "aisle"][n % 2], "source": "dialogue"})  # fmt: skip
    return engine


def test_fold_all_equals_each_users_own_fold(engine: Engine) -> None:
    _engine_with_history(engine)
    memories, count = fold_all(engine.store.read_all())
    assert count == sum(len(engine.store.read_stream(u)) for u in engine.store.users())
    assert set(memories) == {"u0", "u1", "u2"}
    for user, memory in memories.items():
        alone = UserMemory.from_events(user, engine.store.read_stream(user))
        assert memory.facts == alone.facts
        assert (memory.version, memory.seq) == (alone.version, alone.seq)


def test_no_collection_runs_during_the_fold_and_the_collector_is_restored(
    engine: Engine,
) -> None:
    _engine_with_history(engine)
    collections: list[str] = []

    def count(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(phase)

    def events() -> Iterator[Event]:
        for event in engine.store.read_all():
            yield event
            # enough new containers to start a collection, were the collector on
            _garbage = [[object()] for _ in range(2_000)]

    gc.callbacks.append(count)
    try:
        for _event in events():
            pass
        assert collections, "the same reading starts collections when nothing pauses them"
        collections.clear()
        assert gc.isenabled()
        fold_all(events())
        assert collections == []
        assert gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(count)


def test_folded_facts_share_what_they_repeat_and_equal_plain_validation(engine: Engine) -> None:
    _engine_with_history(engine)
    memories, _count = fold_all(engine.store.read_all())
    facts = list(memories["u0"].facts.values())
    assert len(facts) >= 10
    assert len({id(f.provenance) for f in facts}) == 1  # no provenance given: one shared
    assert len({id(f.key) for f in facts}) == 1
    assert len({id(f.user_id) for f in facts}) == 1
    for event in engine.store.read_stream("u0"):
        if "fact" in event.payload:
            plain = Fact.model_validate({**event.payload["fact"], "seq": event.seq})
            assert memories["u0"].facts[plain.id].model_dump() == {
                **plain.model_dump(),
                "status": memories["u0"].facts[plain.id].status,
                "superseded_by": memories["u0"].facts[plain.id].superseded_by,
                "supersede_reason": memories["u0"].facts[plain.id].supersede_reason,
                "status_reason": memories["u0"].facts[plain.id].status_reason,
            }
