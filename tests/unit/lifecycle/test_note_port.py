"""The lifecycle writes through a narrow port: note and consolidation events, checked first."""

from __future__ import annotations

from typing import Any

import pytest

from memkg import Engine
from memkg.errors import InvalidOperation
from memkg.model.event import EventType, NewEvent


def _event(engine: Engine, kind: EventType, payload: dict[str, Any], user: str = "u1") -> NewEvent:
    return NewEvent(event_id=engine.clock.new_id("evt"), type=kind, user_id=user,
                    domain="travel", payload=payload, recorded_at=engine.clock.now())  # fmt: skip


def test_the_engine_offers_no_unchecked_append(plain: Engine) -> None:
    assert not hasattr(plain, "append_events")


def test_a_saved_note_goes_through(plain: Engine) -> None:
    result = plain.save_memory_note("u1", "travel", "Prefers aisle seats on long flights", "global")
    assert result.saved
    assert [e.type for e in plain.store.read_stream("u1")] == [EventType.NOTE_SAVED]


@pytest.mark.parametrize(
    ("kind", "payload", "user", "says"),
    [
        (EventType.FACT_RETRACTED, {"fact_id": "f1", "reason": "x"}, "u1", "only note"),
        (EventType.NOTE_SAVED, {"note": {"text": "no id"}}, "u1", "not a valid note"),
        (EventType.NOTE_DROPPED, {"note_id": "n1"}, "u2", "another user"),
    ],
)
def test_anything_else_is_refused_and_nothing_is_stored(
    plain: Engine, kind: EventType, payload: dict[str, Any], user: str, says: str
) -> None:
    plain.save_memory_note("u1", "travel", "Prefers aisle seats on long flights", "global")
    before = plain.store.stream_version("u1")
    good = _event(plain, EventType.NOTE_DROPPED, {"note_id": "n0", "reason": "r"})
    with pytest.raises(InvalidOperation) as caught:
        plain.append_notes("u1", [good, _event(plain, kind, payload, user)])
    assert caught.value.code == "note.event" and says in caught.value.message
    assert plain.store.stream_version("u1") == before


def test_a_notes_provenance_may_be_a_mapping_and_a_bad_one_is_refused(plain: Engine) -> None:
    """As ``ingest`` takes an observation's provenance as JSON, so does a note."""
    given = {"consent_granted": True, "consent_version": "v1", "purpose": "care",
             "audit_log_id": "aud-9"}  # fmt: skip
    saved = plain.save_memory_note("u1", "travel", "Prefers aisle seats on long flights",
                                   "global", provenance=given)  # fmt: skip
    assert saved.saved
    [event] = plain.store.read_stream("u1")
    kept = event.payload["note"]["provenance"]
    assert {k: kept[k] for k in given} == given
    for bad in (5, {"consent_granted": "perhaps"}, {"unknown": 1}):
        refused = plain.save_memory_note("u1", "travel", "Likes window seats", "global",
                                         provenance=bad)  # fmt: skip
        assert not refused.saved and refused.problems[0].code == "note.invalid", bad
    assert len(plain.store.read_stream("u1")) == 1
