"""The openai adapter, driven through the real ``openai`` client against a local server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from memkg import (
    Engine,
    EngineConfig,
    FrozenClock,
    LLMBadResponse,
    LLMConfig,
    LLMError,
    LLMUnavailable,
    Message,
    Tool,
)
from memkg.llm.openai_adapter import OpenAIChat
from support.openai_server import OpenAIServer
from support.scripted_model import ScriptedModel


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    score: float
    reasons: list[str]


TOOL = Tool(
    name="lookup",
    description="Look up.",
    parameters={
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    },
)


def script(body: dict[str, Any]) -> Any:
    if body.get("response_format"):
        return Verdict(label="ok", score=0.5, reasons=["fine"])
    if body.get("tools"):
        return {"content": None, "tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]}
    if body["messages"][-1]["content"] == "slow":
        time.sleep(1.0)
    return "plain text"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(script) as running:
        yield running


def _config(server: OpenAIServer, **more: Any) -> LLMConfig:
    return LLMConfig(model="scripted", base_url=server.base_url, api_key="test-key", **more)


def test_chat_with_tools_and_structured_output(server: OpenAIServer) -> None:
    with OpenAIChat(_config(server, max_retries=0)) as llm:
        reply = llm.chat([Message.system("s"), Message.user("hi")], tools=[TOOL])
        assert reply.tool_calls[0].name == "lookup" and reply.tool_calls[0].parsed() == {"q": "x"}
        assert llm.structured([Message.user("judge")], Verdict, name="verdict").score == 0.5
        assert llm.chat([Message.user("hi")]).content == "plain text"
    first = server.requests[0]
    assert first["model"] == "scripted" and first["tools"] == [TOOL.to_openai()]
    assert server.requests[1]["response_format"]["json_schema"]["strict"] is True
    assert server.errors == []


def test_overload_is_retried_then_reported_unavailable(server: OpenAIServer) -> None:
    server.fail_next(2, status=503)
    with OpenAIChat(_config(server, max_retries=1)) as llm, pytest.raises(LLMUnavailable) as caught:
        llm.chat([Message.user("hi")])
    assert "HTTP 503 after 1 retries" in caught.value.message and len(server.requests) == 2


def test_garbage_is_a_bad_response(server: OpenAIServer) -> None:
    server.garbage_next()
    with OpenAIChat(_config(server, max_retries=0)) as llm, pytest.raises(LLMBadResponse):
        llm.chat([Message.user("hi")])


def test_a_refused_request_is_not_retried(server: OpenAIServer) -> None:
    server.fail_next(1, status=401)
    with OpenAIChat(_config(server, max_retries=2)) as llm, pytest.raises(LLMError) as caught:
        llm.chat([Message.user("hi")])
    assert caught.value.code == "llm.rejected" and len(server.requests) == 1


def test_timeout_and_endpoint_down_are_unavailable(server: OpenAIServer) -> None:
    with OpenAIChat(_config(server, max_retries=0, timeout_s=0.2)) as llm:
        with pytest.raises(LLMUnavailable) as caught:
            llm.chat([Message.user("slow")])
        assert caught.value.code == "llm.timeout"
    url = server.base_url
    server.close()
    down = LLMConfig(model="m", base_url=url, max_retries=0)
    with OpenAIChat(down) as llm, pytest.raises(LLMUnavailable, match="cannot reach"):
        llm.chat([Message.user("hi")])


def test_engine_consolidates_through_the_configured_endpoint(clock: FrozenClock) -> None:
    model = ScriptedModel(topics={"window": "seat"})
    with OpenAIServer(model) as server:
        config = EngineConfig(llm=_config(server, max_retries=0))
        with Engine(clock=clock, config=config) as engine:
            for text in ("Prefers window seats", "Likes the window seat"):
                assert engine.save_memory_note("u1", "travel", text, session_id="s1").saved
            report = engine.consolidate("u1", "travel", "s1").result(timeout=20)
        assert report.method == "llm" and len(report.memories) == 1 and server.errors == []
    with Engine(
        clock=clock,
        config=EngineConfig(llm=LLMConfig(model="m", base_url=server.base_url, max_retries=0)),
    ) as engine:
        engine.save_memory_note("u1", "travel", "Prefers window seats", session_id="s1")
        down = engine.consolidate("u1", "travel", "s1").result(timeout=20)
    assert down.method == "fallback" and "llm.unavailable" in (down.fallback_reason or "")


def test_a_slow_answer_is_cut_off_at_the_timeout_however_it_trickles(
    server: OpenAIServer,
) -> None:
    # about 40 pieces of 8 bytes, 0.05 s apart: no single read waits long, the whole takes ~2 s
    server.trickle_next(piece=8, pause=0.05)
    with OpenAIChat(_config(server, max_retries=0, timeout_s=0.5)) as llm:
        with pytest.raises(LLMUnavailable) as caught:
            llm.chat([Message.user("hi")])
        assert caught.value.code == "llm.timeout" and "within 0.5 s" in caught.value.message
        assert llm.chat([Message.user("hi")]).content == "plain text"  # the next call is whole


def test_an_answer_over_the_size_bound_is_refused(server: OpenAIServer) -> None:
    bounded = _config(server, max_retries=0, max_reply_bytes=100)
    with OpenAIChat(bounded) as llm, pytest.raises(LLMBadResponse) as caught:
        llm.chat([Message.user("hi")])
    assert "more than 100 bytes" in caught.value.message
    assert "not JSON" not in caught.value.message  # said once, as raised, not re-described
    with OpenAIChat(_config(server, max_retries=0)) as llm:
        assert llm.chat([Message.user("hi")]).content == "plain text"  # the default bound
