"""Reads as of a log position or a time take a position a log can hold and a time with a zone.

A position past SQLite's 64-bit integers reached the store as an ``OverflowError``, a negative
one or a flag (``True``) read as a position, a naive time failed a comparison deep in the
fold: each is refused with ``InvalidOperation`` naming the argument and what to send. Every
position from 0 up, past the end of the log included, reads as before.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock, InvalidOperation
from support.observations import T0, obs


@pytest.fixture
def engine(tmp_path: Path) -> Any:
    with Engine.open(tmp_path / "memkg.db", clock=FrozenClock(T0)) as engine:
        engine.ingest(obs(user_id="mei"))
        engine.ingest(obs(user_id="mei", key="seat.preference", value="aisle"))
        yield engine


READS_AS_OF = {
    "facts": lambda e, seq: e.facts("mei", as_of=seq),
    "memory": lambda e, seq: e.memory("mei", as_of=seq),
    "graph": lambda e, seq: e.graph("mei", as_of=seq),
    "turtle": lambda e, seq: e.graph("mei", as_of=seq, fmt="turtle"),
    "user_graph": lambda e, seq: e.user_graph("mei", as_of=seq),
}


@pytest.mark.parametrize("read", sorted(READS_AS_OF))
@pytest.mark.parametrize("seq", [2**63, 2**64, -1, True, 1.0, "1", [1]])
def test_a_position_no_log_holds_is_refused(engine: Engine, read: str, seq: Any) -> None:
    before = engine.read_events("mei")
    with pytest.raises(InvalidOperation) as refused:
        READS_AS_OF[read](engine, seq)
    assert refused.value.code == "read.as_of"
    assert "as_of" in refused.value.message and "0 to 9223372036854775807" in refused.value.message
    assert engine.read_events("mei") == before


@pytest.mark.parametrize("seq", [0, 1, 2, 3, 2**63 - 1])
def test_every_position_a_log_can_hold_reads(engine: Engine, seq: int) -> None:
    held = min(seq, 2)
    assert len(engine.facts("mei", as_of=seq)) == held
    assert len(engine.graph("mei", as_of=seq)["edges"]) == held  # type: ignore[index]


@pytest.mark.parametrize("at", [datetime(2026, 5, 1, 9), "2026-05-01T09:00:00Z", 0])
def test_a_time_without_a_zone_is_refused(engine: Engine, at: Any) -> None:
    for read in (lambda: engine.holding("mei", at), lambda: engine.facts("mei", at=at)):
        with pytest.raises(InvalidOperation) as refused:
            read()
        assert refused.value.code == "read.at"
        assert "timezone" in refused.value.message


def test_times_at_the_edges_of_the_calendar_read(engine: Engine) -> None:
    edges = [datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC),
             datetime(1, 1, 1, tzinfo=UTC) + timedelta(hours=1), T0]  # fmt: skip
    assert [len(engine.holding("mei", at)) for at in edges] == [0, 2, 0, 2]
    assert [len(engine.facts("mei", at=at)) for at in edges] == [2, 2, 2, 2]  # none expires
