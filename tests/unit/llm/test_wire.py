"""The wire format: strict schemas, completions parsed, garbage refused with a clear error."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from memkg import LLMBadResponse, Message, Reply, ToolCall
from memkg.llm.wire import messages_to_wire, parse_output, reply_from_wire, strict_schema


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    tags: list[str] = []


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[Inner]
    mode: Literal["a", "b"] = "a"
    note: str | None = None


def _objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [o for item in node for o in _objects(item)]
    if not isinstance(node, dict):
        return []
    here = [node] if node.get("type") == "object" else []
    return here + [o for value in node.values() for o in _objects(value)]


def test_strict_schema_requires_every_property_and_forbids_others() -> None:
    schema = strict_schema(Outer)
    objects = _objects(schema)
    assert len(objects) == 2
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    assert "default" not in str(schema)


def test_messages_round_trip_the_openai_shape() -> None:
    call = ToolCall(id="c1", name="save_memory_note", arguments='{"note": "x"}')
    wire = messages_to_wire(
        [Message.user("hi"), Message.assistant(None, [call]), Message.tool("c1", "ok")]
    )
    assert wire[1]["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "save_memory_note", "arguments": '{"note": "x"}'},
    }
    assert wire[2] == {"role": "tool", "content": "ok", "tool_call_id": "c1"}


@pytest.mark.parametrize(
    "completion",
    [{}, {"choices": []}, {"choices": [{"message": None}]}, "<html>", {"choices": [{}]}],
)
def test_garbage_is_a_bad_response(completion: Any) -> None:
    with pytest.raises(LLMBadResponse, match="not a chat completion"):
        reply_from_wire(completion)


def test_a_refusal_is_reported() -> None:
    completion = {"choices": [{"message": {"content": None, "refusal": "no"}}]}
    with pytest.raises(LLMBadResponse) as caught:
        reply_from_wire(completion)
    assert caught.value.code == "llm.refused"


def test_structured_output_is_validated() -> None:
    good = Reply(content='{"items": [{"name": "x", "tags": []}], "mode": "b", "note": null}')
    assert parse_output(good, Outer, "outer").mode == "b"
    for content, match in [
        ('{"items": [{"nam": "x"}]}', "does not match its schema"),
        ("not json", "does not match its schema"),
        (None, "no content"),
    ]:
        with pytest.raises(LLMBadResponse, match=match):
            parse_output(Reply(content=content), Outer, "outer")
    with pytest.raises(LLMBadResponse, match="cut off"):
        parse_output(Reply(content="{", finish_reason="length"), Outer, "outer")


def test_tool_call_arguments_must_be_a_json_object() -> None:
    assert ToolCall(id="c", name="f", arguments='{"a": 1}').parsed() == {"a": 1}
    for bad in ("{", "[1]"):
        with pytest.raises(LLMBadResponse):
            ToolCall(id="c", name="f", arguments=bad).parsed()


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": ' + "1" * 5_000 + "}", "integer"),
        ('{"note": "Prefers aisle", "note": "Book first class"}', "'note' appears twice"),
        ('{"a": {"b": 1, "b": 2}}', "'b' appears twice"),
    ],
    ids=["deep", "long integer", "repeated key", "repeated nested key"],
)
def test_tool_call_arguments_that_cannot_be_read_one_way_are_a_bad_response(
    arguments: str, why: str
) -> None:
    with pytest.raises(LLMBadResponse, match=why) as caught:
        ToolCall(id="c", name="f", arguments=arguments).parsed()
    assert caught.value.code == "llm.bad_response" and "tool call f" in caught.value.message


def test_a_structured_answer_that_repeats_a_key_is_refused() -> None:
    content = '{"items": [{"name": "a", "name": "b"}], "mode": "a", "note": null}'
    with pytest.raises(LLMBadResponse, match="'name' appears twice"):
        parse_output(Reply(content=content), Outer, "outer")
    for deep in ('{"items": ' + "[" * 100_000, '{"items": [{"name": "a", "tags": ' + "[" * 5_000):
        with pytest.raises(LLMBadResponse):
            parse_output(Reply(content=deep), Outer, "outer")
