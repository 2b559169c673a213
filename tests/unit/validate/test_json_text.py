"""JSON text from outside is read one way only, and what cannot be is told as such: an
integer of more digits than Python reads (an HTTP body, a JSONL line) is ``value.int_range``
like any other integer past 64 bits, not "not JSON" with Python's own advice; a key given
twice in one object is refused, not read as its last copy; the range message gives the range;
a float past the largest is not called NaN."""

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


def test_a_key_given_twice_in_a_body_or_a_line_is_refused(engine: Engine, tmp_path: Path) -> None:
    """A filter that reads the first ``value`` and a store that keeps the last would disagree
    on what was written; the tool call of a model was refused so already."""
    twice = json.dumps(obs()).replace('"value": ', '"value": "airline:CA", "value": ')
    app, keyring = keyed_app(engine)
    writer = client(app, token(keyring, ["write"], ["travel"]))
    answer = writer.post("/v1/observations", content=twice,
                         headers={"content-type": "application/json"})  # fmt: skip
    assert answer.status_code == 400 and answer.json()["error"] == "request.not_json"
    assert "'value' appears twice" in answer.json()["message"]
    feed = tmp_path / "in.jsonl"
    feed.write_text(twice + "\n", encoding="utf-8")
    out = io.StringIO()
    assert main(["--db", str(tmp_path / "m.db"), "ingest", str(feed)], out) == 3
    assert "'value' appears twice" in out.getvalue() and "input.json" in out.getvalue()
    assert engine.store.head() == 0


def test_the_readers_examples_run() -> None:
    import doctest

    import memkg.jsontext

    result = doctest.testmod(memkg.jsontext, optionflags=doctest.ELLIPSIS)
    assert result.attempted == 2 and result.failed == 0


def test_the_mcp_transport_and_the_cli_context_read_json_one_way_too(
    engine: Engine, tmp_path: Path
) -> None:
    """A tool call over ``/mcp`` with a key given twice is refused before the transport
    reads it (the SDK kept the last copy), and so is ``memkg decide --context``."""
    pytest.importorskip("mcp")
    app, keyring = keyed_app(engine)
    call = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "remember",'
            ' "arguments": {"domain": "travel", "key": "airline.preferred", "value": "airline:CA",'
            ' "value": "airline:MU", "source": "dialogue"}}}')  # fmt: skip
    with client(app, token(keyring, ["write"], ["travel"], user_id="u1")) as agent:
        answer = agent.post(
            "/mcp",
            content=call,
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
        )
    assert answer.status_code == 400 and answer.json()["error"] == "request.not_json"
    assert "'value' appears twice" in answer.json()["message"]
    assert engine.store.head() == 0

    db = str(tmp_path / "m.db")
    for context, code in (('{"airline": "airline:CA", "airline": "airline:MU"}', "usage"),
                          (f'{{"airline": {LONG}}}', "value.int_range")):  # fmt: skip
        out = io.StringIO()
        assert main(["--db", db, "decide", "u1", "--domain", "travel", "--context", context],
                    out) != 0  # fmt: skip
        said = json.loads(out.getvalue().splitlines()[-1])
        assert said["error"] == code, said


def test_a_process_reading_fewer_digits_refuses_past_its_own_limit(engine: Engine) -> None:
    import sys

    from memkg.jsontext import LongInteger, read_json

    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        with pytest.raises(LongInteger, match="1,000 digits"):
            read_json("[" + "7" * 1_000 + "]")
        assert read_json("[" + "7" * 640 + "]") == [int("7" * 640)]
    finally:
        sys.set_int_max_str_digits(before)


def test_a_body_that_is_not_utf8_is_refused_over_mcp_as_elsewhere(engine: Engine) -> None:
    """Bytes that are not UTF-8 are no JSON: a client error, never a server failure."""
    pytest.importorskip("mcp")
    app, keyring = keyed_app(engine)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with client(app, token(keyring, ["write"], ["travel"], user_id="u1")) as agent:
        for body in (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "x": "caf\xe9"}',
                     b"\xff\xfe{}"):  # fmt: skip
            answer = agent.post("/mcp", content=body, headers=headers)
            assert 400 <= answer.status_code < 500, (answer.status_code, answer.text)
