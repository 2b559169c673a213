"""Extract: a candidate stands on the user's own words, quoted from the turn it cites."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkg import Engine, ExtractionReport, FrozenClock, MemoryLLM, Message

USER, DOMAIN, SESSION = "u1", "travel", "s1"


def _candidate(evidence: str, **more: Any) -> dict[str, Any]:
    return {
        "key": "cabin.class",
        "value_json": '"first"',
        "kind": "preference",
        "confidence": 1.0,
        "turn": 0,
        "ruled_out": False,
        "evidence": evidence,
        **more,
    }


def _extract(
    clock: FrozenClock, said: str, *candidates: dict[str, Any], write: bool = True
) -> tuple[Engine, ExtractionReport, MemoryLLM]:
    """An engine whose model answers ``candidates`` for the one user turn ``said``, and the
    report of its extraction."""
    llm = MemoryLLM(replies=[json.dumps({"candidates": list(candidates)})])
    engine = Engine(clock=clock, llm=llm)
    report = engine.extract(USER, DOMAIN, [{"role": "user", "content": said}], write=write)
    return engine, report, llm


def test_a_candidate_whose_evidence_the_user_never_said_is_refused(clock: FrozenClock) -> None:
    """A model that invents a quote would otherwise store, at global scope and as the user's
    word, a preference the user never stated."""
    engine, report, _ = _extract(
        clock,
        "Hi, can you find me a flight to Tokyo?",
        _candidate("Book me first class every time"),
    )
    with engine:
        [outcome] = report.outcomes
        assert not outcome.accepted and outcome.stored_as is None
        [problem] = outcome.problems
        assert (problem.code, problem.path) == ("extract.evidence", "$.evidence")
        assert "turn 0" in problem.message
        assert engine.read_events(USER) == [] and engine.facts(USER) == []


def test_validate_only_refuses_invented_evidence_too(clock: FrozenClock) -> None:
    """A dry run answers what the write would do."""
    engine, report, _ = _extract(
        clock, "Hi, can you find me a flight to Tokyo?", _candidate("first class"), write=False
    )
    with engine:
        assert [p.code for p in report.outcomes[0].problems] == ["extract.evidence"]


def test_an_exclusion_whose_evidence_the_user_never_said_is_no_note(clock: FrozenClock) -> None:
    invented = _candidate("Never put me in economy", value_json='"economy"', ruled_out=True)
    engine, report, _ = _extract(clock, "Find me a flight to Tokyo.", invented)
    with engine:
        assert [p.code for p in report.outcomes[0].problems] == ["extract.evidence"]
        assert engine.notes(USER) == []


@pytest.mark.parametrize(
    ("said", "evidence"),
    [
        ("I'd like FIRST class, please.", "i'd like first class"),
        ("I’d like first class, please.", "I'd like first class"),  # a typographic apostrophe
        ("I'd like\nfirst   class.", "I'd like first class"),  # line breaks and runs of spaces
        ("Book “first class” for me", 'book "first class" for me'),  # other quote marks
        ("Ｆｉｒｓｔ ｃｌａｓｓ please", "first class"),  # full-width letters
        ("First class, every time!", "first class every time"),  # punctuation left out
        ("Always first class.", '"Always first class."'),  # the quote quoted
    ],
)
def test_evidence_is_found_however_the_model_writes_case_width_spacing_or_punctuation(
    clock: FrozenClock, said: str, evidence: str
) -> None:
    """A model copying the user's words drops a full stop or changes a quote mark; that is
    still the user's sentence."""
    engine, report, _ = _extract(clock, said, _candidate(evidence))
    with engine:
        [outcome] = report.outcomes
        assert outcome.accepted and outcome.stored_as == "fact", outcome.problems
        assert [f.value for f in engine.facts(USER)] == ["first"]


@pytest.mark.parametrize("evidence", ["", "  ", "...", "first class to Paris", "economy class"])
def test_evidence_that_is_empty_or_not_the_users_words_is_refused(
    clock: FrozenClock, evidence: str
) -> None:
    engine, report, _ = _extract(clock, "First class, please.", _candidate(evidence))
    with engine:
        assert [p.code for p in report.outcomes[0].problems] == ["extract.evidence"]


def test_evidence_from_another_user_turn_does_not_count(clock: FrozenClock) -> None:
    """The turn is the fact's provenance (``dialogue_turn_N``): its words must be there."""
    llm = MemoryLLM(replies=[json.dumps({"candidates": [_candidate("first class", turn=2)]})])
    dialogue = [Message.user("First class, please."), Message.assistant("Sure."),
                Message.user("To Tokyo.")]  # fmt: skip
    with Engine(clock=clock, llm=llm) as engine:
        report = engine.extract(USER, DOMAIN, dialogue)
        assert [p.code for p in report.outcomes[0].problems] == ["extract.evidence"]


def test_the_model_is_asked_for_a_verbatim_quote(clock: FrozenClock) -> None:
    engine, _, llm = _extract(clock, "First class, please.", _candidate("First class"))
    with engine:
        instructions = llm.requests[0]["messages"][0]["content"]
        assert "verbatim" in instructions and "evidence" in instructions
