"""An object value in an explanation reads the same whatever order its keys were stored in:
PostgreSQL's JSONB keeps them in an order of its own, so a decision made in one process must
replay in another."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memkg import Engine
from memkg.rules.text import value_text
from support.observations import CONSENTED

READING = {"systolic": 190, "diastolic": 110}


def test_an_object_reads_in_key_order_whatever_order_it_came_in() -> None:
    flipped = dict(reversed(list(READING.items())))
    assert value_text(READING) == value_text(flipped) == "diastolic: 110, systolic: 190"
    assert value_text({"b": [1.5, True], "a": {"y": 2, "x": 1}}) == "a: (x: 1, y: 2), b: 1.5, yes"


def _decide_and_replay(open_engine: Callable[[], Engine]) -> None:
    with open_engine() as deciding:
        deciding.ingest({"user_id": "bp", "domain": "health", "key": "bp.reading",
                         "value": READING, "source": "dialogue", "confidence": 0.9,
                         **CONSENTED})  # fmt: skip
        made = deciding.decide("bp", "health", {"symptom": "chest_pain"})
        assert any("diastolic: 110, systolic: 190" in c.message for c in made.candidates)
    with open_engine() as other:  # another process: the value read back from the store
        replayed = other.replay(made.decision_id)
        assert replayed.reproduced, replayed.differences


def test_a_decision_quoting_an_object_replays_in_another_process_on_sqlite(
    tmp_path: Path,
) -> None:
    _decide_and_replay(lambda: Engine.open(tmp_path / "memkg.db"))


@pytest.mark.postgres
def test_a_decision_quoting_an_object_replays_in_another_process_on_postgres(
    postgres_dsn: str, pg_schema: str
) -> None:
    _decide_and_replay(lambda: Engine.connect(postgres_dsn, schema=pg_schema))
