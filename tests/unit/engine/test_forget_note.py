"""A free-text note is forgotten on its own, as a fact is: ``retract`` with its id."""

from __future__ import annotations

import pytest

from memkg import Engine, EventType, InvalidOperation, NotFound


def test_a_note_is_retracted_by_its_id_and_leaves_profile_and_recall(engine: Engine) -> None:
    kept = engine.save_memory_note("u1", "travel", "Prefers quiet hotels", scope="global")
    gone = engine.save_memory_note("u1", "travel", "Is afraid of flying at night", scope="global")
    assert kept.id and gone.id

    event = engine.retract("u1", gone.id, "the user asked to forget it")  # was fact.not_found

    assert event.type is EventType.NOTE_DROPPED and event.fact_id == gone.id
    assert [n.id for n in engine.notes("u1", "travel")] == [kept.id]
    text = engine.render_profile("u1", "travel").text
    assert "Prefers quiet hotels" in text and "afraid of flying" not in text
    recalled = engine.recall("u1", "flying at night", k=5).candidates
    assert all(c.ref != gone.id and "flying" not in str(c) for c in recalled)
    with pytest.raises(InvalidOperation) as again:
        engine.retract("u1", gone.id, "twice")
    assert again.value.code == "fact.not_live"


def test_an_unknown_id_is_still_not_found_and_a_reason_is_still_needed(engine: Engine) -> None:
    note = engine.save_memory_note("u1", "travel", "Prefers quiet hotels", scope="global")
    assert note.id
    with pytest.raises(NotFound):
        engine.retract("u1", "note_unknown", "typo")
    with pytest.raises(InvalidOperation) as blank:
        engine.retract("u1", note.id, "  ")
    assert blank.value.code == "fact.reason"
    assert [n.id for n in engine.notes("u1", "travel")] == [note.id]
