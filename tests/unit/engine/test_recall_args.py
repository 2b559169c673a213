"""Recall takes a text query and a whole, non-negative ``k``; anything else is refused with
what to send (it was a ``TypeError`` from deep in the ranking, or a silent ``k`` of 1 for
``True`` and of none for -1), and no trace is left."""

from __future__ import annotations

from typing import Any

import pytest

from memkg import Engine, InvalidOperation
from support.observations import obs


@pytest.fixture
def held(engine: Engine) -> Engine:
    engine.ingest(obs(user_id="mei"))
    engine.ingest(obs(user_id="mei", key="seat.preference", value="window"))
    return engine


@pytest.mark.parametrize("k", [None, -1, 1.5, True, "5", 2.0])
def test_k_is_a_whole_number_from_zero(held: Engine, k: Any) -> None:
    with pytest.raises(InvalidOperation) as refused:
        held.recall("mei", "window seat", k=k)
    assert refused.value.code == "recall.k"
    assert "whole number" in refused.value.message


@pytest.mark.parametrize("query", [None, 5, b"window", ["window"]])
def test_the_query_is_text(held: Engine, query: Any) -> None:
    with pytest.raises(InvalidOperation) as refused:
        held.recall("mei", query)
    assert refused.value.code == "argument.type"
    assert refused.value.message.startswith("query is text")


@pytest.mark.parametrize("k", [0, 1, 2, 10**30])
def test_every_k_from_zero_ranks_all_and_injects_at_most_k(held: Engine, k: int) -> None:
    found = held.recall("mei", "window seat airline", k=k)
    assert len(found.candidates) == 2
    assert len(found.injected) == min(k, 2)
