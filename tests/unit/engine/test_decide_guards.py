"""A decision request meets the same envelope rules as a write, and a refused one is logged
in bounded form."""

from __future__ import annotations

import json

import pytest

from memkg import Engine, InvalidOperation, ValidationFailed


@pytest.mark.parametrize(
    ("user_id", "code"),
    [
        ("", "envelope.pattern"),
        ("u" * 10_000, "envelope.pattern"),
        ("a\u202eb", "envelope.pattern"),
    ],
)
def test_decide_refuses_user_ids_ingest_refuses(engine: Engine, user_id: str, code: str) -> None:
    with pytest.raises(ValidationFailed) as ingest_refused:
        engine.ingest({"user_id": user_id, "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "dialogue"})  # fmt: skip
    with pytest.raises(ValidationFailed) as refused:
        engine.decide(user_id, "travel", {"trip_type": "leisure"})
    assert refused.value.report.codes == ingest_refused.value.report.codes == [code]
    assert refused.value.report.problems[0].path == "$.user_id"
    assert engine.decision_log.for_user(user_id) == []


def test_a_nul_in_a_user_id_is_refused_by_both(engine: Engine) -> None:
    """As a lone surrogate is: by what is wrong with it (text.nul, at its character), in a
    write as in a decision; nothing is stored or logged."""
    with pytest.raises(ValidationFailed) as ingest_refused:
        engine.ingest({"user_id": "a\x00b", "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "dialogue"})  # fmt: skip
    assert ingest_refused.value.report.codes == ["text.nul"]
    with pytest.raises(InvalidOperation) as refused:
        engine.decide("a\x00b", "travel", {"trip_type": "leisure"})
    assert refused.value.code == "text.nul"
    assert engine.decision_log.for_user("a\x00b") == []


def test_malformed_domain_and_decision_names_are_refused(engine: Engine) -> None:
    with pytest.raises(ValidationFailed) as refused:
        engine.decide("u1", "t" * 5_000)
    assert refused.value.report.problems[0].path == "$.domain"
    assert str(refused.value).startswith("decision request refused: ")  # not "observation"
    with pytest.raises(ValidationFailed) as refused:
        engine.decide("u1", "travel", decision="Offers!" * 1_000)
    assert refused.value.report.problems[0].path == "$.decision"


def test_a_refused_request_is_logged_in_bounded_form(engine: Engine) -> None:
    huge = "x" * 900_000
    decision = engine.decide("u1", "travel", {"trip_type": "leisure", "note": huge,
                                              "y" * 5_000: 1})  # fmt: skip
    assert decision.result.status.value == "invalid_input"
    logged = engine.decision_log.get(decision.decision_id)
    size = len(json.dumps(logged.model_dump(mode="json")))
    assert size < 20_000, size
    note = logged.request.context["note"]
    assert note["bytes"] == 900_002 and len(note["sha256"]) == 64
    assert logged.request.context["trip_type"] == "leisure"
    assert any("note" in p and "bytes" in p for p in logged.problems)
    assert engine.replay(decision.decision_id).reproduced


def test_an_oversized_timezone_is_bounded_too(engine: Engine) -> None:
    decision = engine.decide("u1", "travel", {"timezone": "Z" * 100_000})
    size = len(json.dumps(engine.decision_log.get(decision.decision_id).model_dump(mode="json")))
    assert decision.result.status.value == "invalid_input" and size < 20_000, size


@pytest.mark.parametrize("sent", [5, ["10:00"], {"h": 10}, True])
def test_a_clock_field_sent_in_the_context_is_invalid_input_whatever_its_type(
    engine: Engine, sent: object
) -> None:
    """local_time is computed from the clock; one sent as a number raised a pydantic error
    from the explanation's builder instead of the invalid_input decision a string gets."""
    decision = engine.decide("mei", "health", {"local_time": sent})
    assert decision.result.status.value == "invalid_input"
    assert any("local_time is computed from the clock" in p for p in decision.problems)
    assert engine.replay(decision.decision_id).reproduced
