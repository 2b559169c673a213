"""Every path takes the engine's lock before the store's: a batch of writes and a decision at
once both finish. Threads are held at the point where the other order would close a cycle;
on a regression the test fails (the engine is left open: closing it would wait for a lock a
stuck thread holds)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from support.observations import T0

OFFERS = {"trip_type": "leisure"}


def _seat(user: str, value: str) -> dict[str, Any]:
    return {"user_id": user, "domain": "travel", "key": "seat.preference", "value": value,
            "source": "dialogue"}  # fmt: skip


def test_a_batch_of_writes_and_a_decision_at_once_both_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine.open(tmp_path / "m.db", clock=FrozenClock(T0))
    engine.ingest(_seat("b", "aisle"))
    engine.decide("b", "travel", OFFERS, decision="offers")
    in_batch, holding = threading.Event(), threading.Event()
    store_one = engine.writer._store_one

    def held(index: int, item: Any) -> Any:
        if index == 0:  # inside the batch, before its first write takes the engine's lock
            in_batch.set()
            holding.wait(timeout=2)
        return store_one(index, item)

    monkeypatch.setattr(engine.writer, "_store_one", held)
    stored: list[Any] = []
    decided: list[Any] = []

    def batch() -> None:
        stored.extend(engine.ingest_many([_seat("a", v) for v in ("window", "aisle", "middle")]))

    def decide() -> None:
        in_batch.wait(timeout=2)
        with engine._lock:  # the engine's lock, as a decision holds it when it reads the store
            holding.set()
            decided.append(engine.decide("b", "travel", OFFERS, decision="offers"))

    threads = [threading.Thread(target=f, daemon=True) for f in (batch, decide)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "the batch and the decision wait on each other"
    assert [o.accepted for o in stored] == [True, True, True] and len(decided) == 1
    assert engine.facts("a", "travel")[-1].value == "middle"
    engine.close()
