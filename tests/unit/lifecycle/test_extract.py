"""Extract: the model proposes candidate facts; only what validates is written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkg import Engine, FrozenClock, InvalidOperation, MemoryLLM, Message, Source
from support.scripted_model import ScriptedModel

USER, DOMAIN, SESSION = "u1", "travel", "s1"

DIALOGUE = [
    Message.user("I prefer aisle seats."),
    Message.assistant("Noted, aisle it is. I think you like business class too."),
    Message.user("I never fly China Eastern. And no middle seats ever."),
    Message.user("Book something luxurious."),
]


def _candidate(key: str, value_json: str, **more: Any) -> dict[str, Any]:
    return {
        "key": key,
        "value_json": value_json,
        "kind": "preference",
        "confidence": 0.8,
        "ruled_out": False,
        **more,
    }


EXTRACTIONS = {
    "prefer aisle": _candidate("seat.preference", '"aisle"'),
    "china eastern": _candidate("airline.avoided", '["airline:MU"]', ruled_out=True),
    "no middle": _candidate("seat.preference", '"middle"', ruled_out=True),
    "luxurious": _candidate("cabin.class", '"luxury"'),
    "business class": _candidate("cabin.class", '"business"'),
    "book something": _candidate("seat.preference", "not json"),
}


@pytest.fixture
def extractor(clock: FrozenClock) -> Engine:
    return Engine(clock=clock, llm=MemoryLLM(ScriptedModel(extractions=EXTRACTIONS)))


def test_candidates_are_validated_and_only_valid_ones_written(extractor: Engine) -> None:
    report = extractor.extract(USER, DOMAIN, DIALOGUE, session_id=SESSION)
    by_key = {(o.candidate.key, o.candidate.value_json): o for o in report.outcomes}
    aisle = by_key["seat.preference", '"aisle"']
    assert aisle.accepted and aisle.stored_as == "fact"
    fact = extractor.fact(USER, aisle.id or "")
    assert fact.source is Source.DIALOGUE and fact.provenance.source_ref == "dialogue_turn_0"
    assert by_key["airline.avoided", '["airline:MU"]'].stored_as == "fact"
    assert by_key["cabin.class", '"luxury"'].problems[0].code == "schema.enum"
    assert by_key["seat.preference", "not json"].problems[0].code == "extract.value"
    assert {f.key for f in extractor.facts(USER)} == {"seat.preference", "airline.avoided"}
    # "business class" only ever appeared in the assistant's turn: the model never saw it there
    assert ("cabin.class", '"business"') not in by_key


def test_an_exclusion_without_a_negative_key_is_kept_as_a_note(extractor: Engine) -> None:
    report = extractor.extract(USER, DOMAIN, DIALOGUE, session_id=SESSION)
    middle = next(o for o in report.outcomes if o.candidate.value_json == '"middle"')
    assert middle.accepted and middle.stored_as == "note"
    [note] = extractor.notes(USER)
    assert note.text.startswith('Ruled out seat.preference = "middle"')
    assert "middle" not in [f.value for f in extractor.facts(USER)]


def test_a_candidate_from_an_assistant_turn_is_rejected(clock: FrozenClock) -> None:
    model = ScriptedModel()
    answer = {
        "candidates": [
            {**_candidate("cabin.class", '"business"'), "turn": 1, "evidence": "business class"}
        ]
    }
    reply = {"content": json.dumps(answer)}
    llm = MemoryLLM(lambda body: reply if body.get("response_format") else model(body))
    with Engine(clock=clock, llm=llm) as engine:
        report = engine.extract(USER, DOMAIN, DIALOGUE)
        assert report.rejected[0].problems[0].code == "extract.turn"
        assert engine.read_events(USER) == []
    schema = llm.requests[0]["response_format"]["json_schema"]
    assert schema["name"] == "memkg_extraction" and schema["strict"] is True


def test_validate_only_writes_nothing(extractor: Engine) -> None:
    report = extractor.extract(USER, DOMAIN, DIALOGUE, write=False)
    assert len(report.accepted) == 3 and extractor.read_events(USER) == []


def test_extraction_needs_a_model(plain: Engine) -> None:
    with pytest.raises(InvalidOperation) as caught:
        plain.extract(USER, DOMAIN, DIALOGUE)
    assert caught.value.code == "llm.not_configured"


def test_openai_style_message_dicts_work_like_messages(extractor: Engine) -> None:
    dicts = [
        {"role": "user", "content": "I prefer aisle seats.", "name": "li"},
        {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
    ]
    report = extractor.extract(USER, DOMAIN, dicts, session_id=SESSION)
    assert [(o.candidate.key, o.accepted) for o in report.outcomes] == [("seat.preference", True)]
    with pytest.raises(InvalidOperation) as caught:
        extractor.extract(USER, DOMAIN, [{"role": "robot", "content": "hi"}])
    assert caught.value.code == "message.invalid" and "dialogue[0]" in caught.value.message
