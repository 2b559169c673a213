"""What one write reads of its user: the graph once, for the write's block (the append takes
the block's memory, and the freeze check the graph that memory was read from), the stream mark
once. Counted, never timed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memkg import Engine
from memkg.events import projection
from memkg.events.stored import stored_fact
from memkg.model.fact import Fact
from support.observations import obs


@pytest.fixture
def counted(sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    calls = {"graph": 0, "stream_mark": 0}

    def count(name: str, read: Callable[..., Any]) -> Callable[..., Any]:
        def counting(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return read(*args, **kwargs)

        return counting

    projections, store = sqlite_engine.projections, sqlite_engine.store
    monkeypatch.setattr(projections, "graph", count("graph", projections.graph))
    monkeypatch.setattr(store, "stream_mark", count("stream_mark", store.stream_mark))
    yield calls


def test_a_write_reads_its_users_graph_and_the_stream_mark_once(
    sqlite_engine: Engine, counted: dict[str, int]
) -> None:
    sqlite_engine.ingest(obs())
    sqlite_engine.ingest(obs(value="airline:CA", source="behavior"))  # a live claim to weigh
    for write in (
        lambda: sqlite_engine.ingest(obs(value="airline:HO", source="profile")),
        lambda: sqlite_engine.ingest_many([obs(value="airline:CZ", source="third_party")]),
        lambda: sqlite_engine.signal("u1", "travel", "airline.preferred", "airline:MU", "mention"),
    ):
        counted.update(graph=0, stream_mark=0)
        write()
        assert counted == {"graph": 1, "stream_mark": 1}
    assert len(sqlite_engine.memory("u1").facts) == 4


def test_a_write_reads_each_new_fact_from_its_payload_once(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The freeze check's preview and the fold of the appended events take the facts the
    journal read (``asserted_facts``), not the payloads again."""
    reads = 0

    def counting(stored: dict[str, Any], seq: int) -> Fact:
        nonlocal reads
        reads += 1
        return stored_fact(stored, seq)

    sqlite_engine.ingest(obs())  # the user's graph is resident from here on
    monkeypatch.setattr(projection, "stored_fact", counting)
    turn = {"scope": "turn", "session_id": "s1", "provenance": {"source_ref": "turn-1"}}
    for made, new in (
        (obs(value="airline:CA", source="behavior"), 1),  # a conflict: previewed
        (obs(value="airline:CA", source="profile"), 1),
        (obs(value="airline:HO", **turn), 2),  # the instruction and its session note
    ):
        reads = 0
        sqlite_engine.ingest(made)
        assert reads == new
    assert len(sqlite_engine.memory("u1").facts) == 5
