"""Fixtures for the lifecycle tests: an engine whose model is the scripted in-memory twin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, MemoryLLM
from support.scripted_model import ScriptedModel

USER, DOMAIN, SESSION = "u1", "travel", "s1"


@pytest.fixture
def scripted() -> ScriptedModel:
    return ScriptedModel(
        topics={"window": "seat", "aisle": "seat", "spicy": "food", "quiet": "hotel"}
    )


@pytest.fixture
def llm(scripted: ScriptedModel) -> MemoryLLM:
    return MemoryLLM(scripted)


@pytest.fixture
def life(clock: FrozenClock, llm: MemoryLLM) -> Iterator[Engine]:
    """An in-memory engine with the scripted model."""
    with Engine(clock=clock, llm=llm) as engine:
        yield engine


@pytest.fixture
def plain(clock: FrozenClock) -> Iterator[Engine]:
    """An in-memory engine with no model configured."""
    with Engine(clock=clock) as engine:
        yield engine


@pytest.fixture(params=["memory", "sqlite"])
def eng(request: pytest.FixtureRequest, clock: FrozenClock, tmp_path: Path) -> Iterator[Engine]:
    """An engine with no model, in memory and on a SQLite file."""
    engine = (
        Engine(clock=clock)
        if request.param == "memory"
        else Engine.open(tmp_path / "m.db", clock=clock)
    )
    with engine:
        yield engine
