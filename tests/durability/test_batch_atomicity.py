"""A batch of writes (``ingest_many``, the HTTP list form) is one transaction: failed at any of
its statements, it stores nothing, and the engine that wrote it keeps nothing of it either.

Its caches must not hold the items appended before the failure: once another process moves
the store past the versions those items had reached, the engine would fold the other
process's events onto facts the store does not hold, serve them, decide on them and write
from them. SQLite and PostgreSQL, two engines on one store as two processes would be."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, StoreError
from support.faults import StatementFaults
from support.observations import obs
from support.two_engines import two_engines

Opener = tuple[Engine, Engine, StatementFaults]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Opener]:
    """Engines A and B on one store, the statements they run countable by ``faults``."""
    faults = StatementFaults()
    faults.install(monkeypatch)
    a, b = two_engines(request, tmp_path)
    yield a, b, faults
    faults.disarm()
    a.close()
    b.close()


def _view(engine: Engine, user: str) -> list[tuple[str, object, str]]:
    return sorted((f.key, str(f.value), f.id) for f in engine.facts(user))


_BATCH = [
    obs(user_id="x", key="airline.avoided", value=["airline:MU"]),
    obs(user_id="y", key="seat.preference", value="aisle"),
    obs(user_id="x", key="airline.preferred", value="airline:CA"),
    obs(user_id="x", key="seat.preference", value="window"),
]


def test_a_failed_batch_leaves_no_trace_in_the_writer_s_memory(two: Opener) -> None:
    a, b, faults = two
    a.ingest(obs(user_id="x", key="seat.preference", value="aisle"))
    a.ingest(obs(user_id="y", key="airline.preferred", value="airline:MU"))
    before = {u: _view(a, u) for u in ("x", "y")}
    failures = 0
    while True:
        faults.arm(failures + 1)
        try:
            a.ingest_many(_BATCH)
        except StoreError:
            assert faults.fired, "the batch failed without an injected fault"
            failures += 1
        finally:
            faults.disarm()
        if not faults.fired:
            break
        # nothing stored, and nothing of the batch held by the engine that wrote it
        assert {u: _view(b, u) for u in ("x", "y")} == before, f"statement {failures}"
        # another process moves the store past the versions the failed items had reached
        for value in ("window", "middle", "aisle"):
            b.ingest(obs(user_id="x", key="seat.preference", value=value, source="behavior"))
        b.ingest(obs(user_id="y", key="seat.preference", value="window", source="behavior"))
        assert {u: _view(a, u) for u in ("x", "y")} == {u: _view(b, u) for u in ("x", "y")}
        assert a.decide("x", "travel", {}).result == b.decide("x", "travel", {}).result
        before = {u: _view(b, u) for u in ("x", "y")}
    assert failures >= 4, "a failure before each of the batch's appends at least"
    assert {f.key for f in a.facts("x")} >= {"airline.avoided", "airline.preferred"}
    assert _view(a, "x") == _view(b, "x")
