"""The in-memory ``LLM``: a deterministic twin for tests, driven by a script.

A script sees the exact chat-completions request body an endpoint would (``requests`` keeps
them all) and answers with a *scripted reply*: text, a pydantic model (sent as its JSON), or
``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}``.

>>> llm = MemoryLLM(replies=["hello", {"tool_calls": [{"name": "ping", "arguments": {}}]}])
>>> llm.chat([Message.user("hi")]).content
'hello'
>>> llm.chat([Message.user("again")]).tool_calls[0].name
'ping'
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from memkg.errors import LLMBadResponse, LLMUnavailable
from memkg.llm.port import Message, Out, Reply, Tool
from memkg.llm.wire import messages_to_wire, parse_output, reply_from_wire, response_format
from memkg.llm.wire import tools_to_wire as _tools

ScriptReply = str | BaseModel | dict[str, Any]
Script = Callable[[dict[str, Any]], ScriptReply]


def completion_json(reply: ScriptReply, *, model: str, number: int) -> dict[str, Any]:
    """A chat completion (wire shape) carrying ``reply``; tool call ids are ``call_<n>_<i>``."""
    if isinstance(reply, str):
        spec: dict[str, Any] = {"content": reply}
    elif isinstance(reply, BaseModel):
        spec = {"content": reply.model_dump_json()}
    else:
        spec = dict(reply)
    calls = []
    for index, call in enumerate(spec.get("tool_calls") or ()):
        arguments = call.get("arguments", {})
        calls.append(
            {
                "id": call.get("id") or f"call_{number}_{index}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments, ensure_ascii=False),
                },
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": spec.get("finish_reason") or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class MemoryLLM:
    """Answers from ``script`` (a function of the request), else from ``replies`` in order."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        replies: Sequence[ScriptReply] = (),
        model: str = "memory-llm",
        unavailable: str | None = None,
    ) -> None:
        self.script = script
        self.replies: deque[ScriptReply] = deque(replies)
        self.model = model
        self.unavailable = unavailable
        self.requests: list[dict[str, Any]] = []
        self._numbers = itertools.count(1)
        self.closed = False

    @classmethod
    def down(cls, reason: str = "connection refused") -> MemoryLLM:
        """A twin of an endpoint that cannot be reached."""
        return cls(unavailable=reason)

    def chat(self, messages: Sequence[Message], *, tools: Sequence[Tool] = ()) -> Reply:
        body: dict[str, Any] = {"model": self.model, "messages": messages_to_wire(messages)}
        if tools:
            body["tools"] = _tools(tools)
        return self._answer(body)

    def structured(self, messages: Sequence[Message], output: type[Out], *, name: str) -> Out:
        body = {
            "model": self.model,
            "messages": messages_to_wire(messages),
            "response_format": response_format(output, name),
        }
        return parse_output(self._answer(body), output, name)

    def close(self) -> None:
        self.closed = True

    def _answer(self, body: dict[str, Any]) -> Reply:
        self.requests.append(body)
        if self.unavailable is not None:
            raise LLMUnavailable(f"memory LLM is down: {self.unavailable}")
        if self.script is not None:
            reply = self.script(body)
        elif self.replies:
            reply = self.replies.popleft()
        else:
            raise LLMBadResponse("memory LLM has no scripted reply left for this request")
        return reply_from_wire(completion_json(reply, model=self.model, number=next(self._numbers)))
