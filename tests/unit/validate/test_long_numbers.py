"""A number past what memkg keeps is told as such wherever it comes in: an integer of more
digits than Python reads (an HTTP body, a JSONL line) is ``value.int_range`` like any other
integer past 64 bits, not "not JSON" with Python's own advice; the message says which side of
the range it is past; a float past the largest is not called NaN."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memkg import Engine, ValidationFailed
from memkg.cli import main
from memkg.config import Limits
from memkg.validate.limits import check_value
from support.observations import obs
from support.service import client, keyed_app, token

LONG = "1" + "0" * 5_000


def test_an_integer_of_thousands_of_digits_in_a_body_is_out_of_range(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    writer = client(app, token(keyring, ["write"], ["travel"]))
    body = json.dumps(obs(key="travel.companions", value=0)).replace(
        '"value": 0', f'"value": {LONG}'
    )
    answer = writer.post("/v1/observations", content=body,
                         headers={"content-type": "application/json"})  # fmt: skip
    assert answer.status_code == 422, answer.text
    [problem] = answer.json()["problems"]
    assert problem["code"] == "value.int_range" and "5,001 digits" in problem["message"]
    assert "sys.set_int_max_str_digits" not in answer.text
    assert engine.store.head() == 0


def test_an_integer_of_thousands_of_digits_on_a_jsonl_line_is_out_of_range(
    tmp_path: Path,
) -> None:
    line = json.dumps(obs(key="travel.companions", value=0)).replace(
        '"value": 0', f'"value": {LONG}'
    )
    feed = tmp_path / "in.jsonl"
    feed.write_text(line + "\n", encoding="utf-8")
    out = io.StringIO()
    assert main(["--db", str(tmp_path / "m.db"), "ingest", str(feed)], out) == 3
    said = out.getvalue()
    assert "value.int_range" in said and "5,001 digits" in said, said


@pytest.mark.parametrize("number", [-(2**63) - 1, 2**63, 10**30])
def test_the_range_message_says_what_the_range_is(number: int) -> None:
    [problem] = check_value(number, Limits())
    assert problem.code == "value.int_range"
    assert "-2**63 to 2**63 - 1" in problem.message, problem.message
    assert "of 64 bits is past" not in problem.message


def test_a_float_past_the_largest_is_not_called_nan(engine: Engine) -> None:
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest(obs(key="travel.companions", value=float("inf")))
    [problem] = refused.value.report.problems
    assert problem.code == "value.non_finite" and "1.8e308" in problem.message
