"""A read that catches a user's graph up with another process's writes waits for a decision
reading that graph in this process: every part of a decision comes from one state of memory.

Two engines share one SQLite file, as two processes do. One writes; the other holds the user
resident and decides, while a thread of its own reads the user (``facts``), which folds the
other engine's write into the resident graph. The decision is held between reading the graph
and reading its keys for as long as that read could take to fold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision
from support.observations import T0

OFFERS = {"trip_type": "leisure"}


def _seat(engine: Engine, value: str) -> None:
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "seat.preference", "value": value,
                   "source": "dialogue", "confidence": 0.9})  # fmt: skip


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[tuple[Engine, Engine]]:
    clock = FrozenClock(T0)
    with (
        Engine.open(tmp_path / "m.db", clock=clock) as writer,
        Engine.open(tmp_path / "m.db", clock=clock) as reader,
    ):
        yield writer, reader


def test_a_read_folding_another_process_write_waits_for_a_decision_in_progress(
    engines: tuple[Engine, Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, reader = engines
    _seat(writer, "aisle")
    before = reader.decide("u1", "travel", OFFERS, decision="offers")  # the user resident
    assert [m.value for m in before.explanation.memory if m.key == "seat.preference"] == [
        "aisle"
    ]
    deciding, folded = threading.Event(), threading.Event()
    reviews = reader.projections.reviews

    def held(user_id: str, graph: Any = None) -> Any:
        # the decision has read the graph and its log position; its keys are read next
        if threading.current_thread() is decider:
            deciding.set()
            folded.wait(timeout=2)  # as long as a fold takes, or until it is shut out
        return reviews(user_id, graph)

    monkeypatch.setattr(reader.projections, "reviews", held)
    made: list[Decision] = []
    decider = threading.Thread(
        target=lambda: made.append(reader.decide("u1", "travel", OFFERS, decision="offers"))
    )
    decider.start()
    assert deciding.wait(timeout=30)
    _seat(writer, "window")  # another process's write, after the decision's log position
    seen = reader.facts("u1", "travel")  # folds the write into the resident graph
    folded.set()
    decider.join(timeout=30)
    assert made and not decider.is_alive()
    assert "window" in {f.value for f in seen}
    # the decision read one state: the one at its log position, which a replay rebuilds
    assert reader.replay(made[0].decision_id).reproduced
    after = reader.decide("u1", "travel", OFFERS, decision="offers")
    assert [m.value for m in after.explanation.memory if m.key == "seat.preference"] == [
        "window"
    ]
