"""Extract: a model's answer that cannot be read is refused per candidate, never half-applied."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkg import Engine, FrozenClock, MemoryLLM, Message

USER, DOMAIN, SESSION = "u1", "travel", "s1"


def _candidate(value_json: str) -> dict[str, Any]:
    return {
        "key": "seat.preference",
        "value_json": value_json,
        "kind": "preference",
        "confidence": 0.8,
        "turn": 0,
        "ruled_out": False,
        "evidence": "I prefer aisle seats",
    }


@pytest.mark.parametrize(
    "value_json",
    ["[" * 100_000 + "]" * 100_000, "1" * 5_000, "[" * 5_000 + "1" * 5_000 + "]" * 5_000],
    ids=["nested too deep", "integer too long", "both"],
)
def test_a_value_that_cannot_be_read_is_refused_and_the_others_still_stored(
    clock: FrozenClock, value_json: str
) -> None:
    answer = {"candidates": [_candidate('"aisle"'), _candidate(value_json)]}
    llm = MemoryLLM(replies=[json.dumps(answer)])
    with Engine(clock=clock, llm=llm) as engine:
        report = engine.extract(USER, DOMAIN, [Message.user("I prefer aisle seats.")],
                                session_id=SESSION)  # fmt: skip
        first, second = report.outcomes
        assert first.accepted and first.stored_as == "fact"
        assert not second.accepted and second.stored_as is None
        [problem] = second.problems
        assert problem.code == "extract.value" and problem.path == "$.value_json"
        assert "value_json" in problem.message or "JSON" in problem.message
        assert [f.value for f in engine.facts(USER)] == ["aisle"]


def test_a_value_that_gives_a_key_twice_is_refused(clock: FrozenClock) -> None:
    answer = {"candidates": [{**_candidate('{"seat": "aisle", "seat": "window"}'),
                              "key": "seat.preference"}]}  # fmt: skip
    with Engine(clock=clock, llm=MemoryLLM(replies=[json.dumps(answer)])) as engine:
        report = engine.extract(USER, DOMAIN, [Message.user("I prefer aisle seats.")])
        [problem] = report.outcomes[0].problems
        assert problem.code == "extract.value" and "appears twice" in problem.message
        assert engine.read_events(USER) == []


def test_validate_only_refuses_an_exclusion_note_the_write_would_refuse(clock: FrozenClock) -> None:
    """An exclusion without a key of its own becomes a note; in a domain of special-category
    data a note needs consent, and a dry run must say so as the write does."""
    candidate = {**_candidate('["penicillin"]'), "key": "medication.current", "kind": "fact",
                 "ruled_out": True, "evidence": "I don't take penicillin"}  # fmt: skip
    answers = [json.dumps({"candidates": [candidate]})] * 2
    with Engine(clock=clock, llm=MemoryLLM(replies=answers)) as engine:
        said = [Message.user("I don't take penicillin.")]
        dry = engine.extract(USER, "health", said, write=False).outcomes[0]
        wet = engine.extract(USER, "health", said).outcomes[0]
        assert [p.code for p in wet.problems] == ["policy.consent_missing"]
        assert (dry.accepted, [p.code for p in dry.problems]) == (False, ["policy.consent_missing"])
        assert engine.read_events(USER) == []
