"""A user's notes are kept while the user is resident, as the reviews are: ``notes`` (and so
``render_profile``, every turn of an agent) reads the user's stream once, then only the events
after what it read, never the whole history again. Counted, not timed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.lifecycle.notes import NoteBook
from support.observations import T0
from support.stream_reads import stream_reads


def _seat(engine: Engine, value: str) -> None:
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "seat.preference",
                   "value": value, "source": "dialogue"})  # fmt: skip


def _fresh_notes(engine: Engine, domain: str | None = None) -> list[Any]:
    """The notes the whole stream gives, folded from scratch."""
    book = NoteBook.from_events(engine.projections.read("u1"))
    return book.live(domain, engine.clock.now())


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_notes_are_read_from_the_stream_once_then_kept_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    clock = FrozenClock(T0)
    config = EngineConfig(shacl=False)
    engine = (Engine(clock=clock, config=config) if store == "memory"
              else Engine.open(tmp_path / "m.db", clock=clock, config=config))  # fmt: skip
    with engine:
        for n in range(60):
            _seat(engine, ["window", "aisle"][n % 2])
        engine.save_memory_note("u1", "travel", "Travelling with a toddler", "global")
        read = stream_reads(engine, monkeypatch)  # events each read hands over
        first = engine.render_profile("u1", "travel")
        assert "Travelling with a toddler" in first.text
        assert len(read) <= 1  # the stream read once (or never: kept since the user's load)
        for step in (timedelta(seconds=1), timedelta(days=2)):
            clock.advance(step)
            read.clear()
            assert engine.render_profile("u1", "travel").text.count("toddler") == 1
            notes = engine.notes("u1", "travel")
            assert read == [], step
            assert notes == _fresh_notes(engine, "travel")
        _seat(engine, "middle")  # a write, then a note: both folded in as they are appended
        engine.save_memory_note("u1", "travel", "Prefers quiet hotels", "global")
        read.clear()
        shown = engine.render_profile("u1", "travel")
        assert read == []
        assert "quiet hotels" in shown.text and 'value: "middle"' in shown.text
        assert engine.notes("u1") == _fresh_notes(engine)


@pytest.mark.parametrize("kept", [True, False])
def test_notes_of_a_user_loaded_from_the_store_are_all_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: bool
) -> None:
    """A user folded from the store's rows (from a snapshot, or from the start) shows every
    note the stream holds, the notes written before a snapshot included, and the load folds
    them: the first turn's prompt after it reads none of the history again."""
    clock = FrozenClock(T0)
    path, config = tmp_path / "m.db", EngineConfig(shacl=False)
    with Engine.open(path, clock=clock, config=config) as engine:
        engine.save_memory_note("u1", "travel", "Travelling with a toddler", "global")
        for n in range(40):
            _seat(engine, ["window", "aisle"][n % 2])
        if kept:
            assert engine.projections.keep_snapshot("u1")
        _seat(engine, "middle")
        engine.save_memory_note("u1", "travel", "Prefers quiet hotels", "global")
    with Engine.open(path, clock=clock, config=config) as engine:
        engine.decide("u1", "travel", {"trip_type": "leisure"}, decision="offers")  # a load
        read = stream_reads(engine, monkeypatch)  # events each read hands over
        shown = engine.render_profile("u1", "travel").text
        assert read == []
        assert "toddler" in shown and "quiet hotels" in shown
        monkeypatch.undo()
        assert engine.notes("u1") == _fresh_notes(engine) != []
