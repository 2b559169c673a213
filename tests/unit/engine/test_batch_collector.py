"""A batch's writes run with the cyclic collector paused (they build long-lived facts and free
few, which it would scan again for nothing), and the collector is as it was afterwards, also
when the batch fails."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from memkg import Engine, InvalidOperation
from support.observations import obs

SEATS = ["window", "aisle", "middle"]


def _batch(n: int) -> list[dict[str, Any]]:
    return [obs(user_id=f"u{i % 40}", key="seat.preference", value=SEATS[i % 3],
                source=["dialogue", "behavior", "profile"][i % 3]) for i in range(n)]  # fmt: skip


def test_no_collection_runs_during_a_batch_and_the_collector_is_restored(engine: Engine) -> None:
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    engine.ingest_many(_batch(10))  # everything loaded once
    gc.callbacks.append(count)
    try:
        for item in _batch(600):
            engine.ingest(item)
        assert len(collections) > 5, "the same writes one by one start collections"
        batch = _batch(600)
        gc.collect()  # a collection due the moment the call starts would be no batch's
        collections.clear()
        outcomes = engine.ingest_many(batch)
        assert collections in ([], [0])  # at most the one due as the collector resumes
        assert [o.accepted for o in outcomes] == [True] * 600
        assert gc.isenabled()
        with pytest.raises(InvalidOperation):
            engine.ingest_many(5)  # type: ignore[arg-type]
        assert gc.isenabled()
        gc.disable()  # a caller that paused it finds it paused
        try:
            engine.ingest_many(_batch(3))
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        gc.callbacks.remove(count)
