"""The in-memory twin sees the exact request body and answers deterministically."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from memkg import LLM, LLMBadResponse, LLMUnavailable, MemoryLLM, Message, Tool


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: int


TOOL = Tool(name="ping", description="Ping.", parameters={"type": "object", "properties": {}})


def test_it_is_an_llm_and_answers_from_a_script() -> None:
    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any]) -> Any:
        seen.append(body)
        if "response_format" in body:
            return Answer(value=7)
        return {"content": None, "tool_calls": [{"name": "ping", "arguments": {"n": 1}}]}

    llm = MemoryLLM(script)
    assert isinstance(llm, LLM)
    reply = llm.chat([Message.user("hi")], tools=[TOOL])
    assert reply.finish_reason == "tool_calls" and reply.tool_calls[0].parsed() == {"n": 1}
    assert seen[0]["tools"] == [TOOL.to_openai()]
    assert llm.structured([Message.user("n?")], Answer, name="answer").value == 7
    assert seen[1]["response_format"]["json_schema"]["name"] == "answer"
    assert reply.as_message().tool_calls == reply.tool_calls


def test_queued_replies_then_a_clear_error() -> None:
    llm = MemoryLLM(replies=["one"])
    assert llm.chat([Message.user("a")]).content == "one"
    with pytest.raises(LLMBadResponse, match="no scripted reply"):
        llm.chat([Message.user("b")])


def test_down_raises_unavailable() -> None:
    llm = MemoryLLM.down("refused")
    with pytest.raises(LLMUnavailable) as caught:
        llm.structured([Message.user("x")], Answer, name="answer")
    assert caught.value.code == "llm.unavailable" and len(llm.requests) == 1
