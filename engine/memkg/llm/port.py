"""The ``LLM`` port: chat with tools, and structured output parsed into pydantic models.

Messages, tool calls and replies are frozen values in the OpenAI chat-completions shape, so an
adapter only translates; ``memory.py`` is the in-memory twin, ``openai_adapter.py`` the real one.

>>> Message.user("hello").model_dump(exclude_defaults=True)
{'role': 'user', 'content': 'hello'}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memkg.errors import LLMBadResponse
from memkg.jsontext import read_json

Out = TypeVar("Out", bound=BaseModel)


class ToolCall(BaseModel):
    """A function call the model asked for; ``arguments`` is the JSON text it wrote."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: str = "{}"

    def parsed(self) -> dict[str, Any]:
        """The arguments as a JSON object, or ``LLMBadResponse`` when the model wrote garbage
        (``read_json``)."""
        try:
            value = read_json(self.arguments or "{}")
        except ValueError as exc:
            raise LLMBadResponse(
                f"tool call {self.name}: the arguments cannot be used: {exc}; send one JSON "
                "object, each key once"
            ) from exc
        if not isinstance(value, dict):
            raise LLMBadResponse(f"tool call {self.name}: arguments are not a JSON object")
        return value


_TEXT_PARTS = frozenset({"text", "input_text"})
"""Content parts memkg reads as text (chat completions' ``text``, the Responses API's
``input_text``)."""
_LEGACY = (
    "the deprecated function-calling shape (role 'function', function_call) is not read: send "
    'the call in the assistant\'s tool_calls and its result as {"role": "tool", '
    '"tool_call_id": ..., "content": ...}'
)


def _text(parts: Sequence[Any]) -> str:
    """The text of content parts, one space between parts that do not end or start with one
    (two parts are two sentences, never one word)."""
    texts = [
        text for part in parts
        if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS
        and (text := str(part.get("text", "")))
    ]  # fmt: skip
    joined = texts[:1]
    for text in texts[1:]:
        joined.append(text if joined[-1][-1].isspace() or text[0].isspace() else " " + text)
    return "".join(joined)


def _arguments(value: Any) -> Any:
    """A call's arguments as JSON text: OpenAI's SDK sends a string; an object is written as
    one (anything else is left for validation to refuse)."""
    if isinstance(value, Mapping):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"tool call arguments cannot be written as JSON: {exc}") from None
    return value or "{}"


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    """``developer`` is the system role of newer models: kept and sent back as it came."""
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    parts: tuple[dict[str, Any], ...] = ()
    """The content parts as given, when some are not text (an image, audio, a file): sent
    back as they came; ``content`` holds their text."""

    @classmethod
    def from_openai(cls, message: Mapping[str, Any]) -> Message:
        """A chat-completions message dict (``{"role": "user", "content": "..."}``, content
        parts, ``tool_calls``) as a ``Message``; fields memkg does not use (``name``) are
        dropped. Raises ``ValueError`` (pydantic's) when the dict is not a message, and for
        the legacy function-calling shape, which would lose the call.

        >>> Message.from_openai({"role": "user", "content": [{"type": "text", "text": "hi"}]})
        Message(role='user', content='hi', tool_calls=(), tool_call_id=None, parts=())
        """
        if message.get("role") == "function" or message.get("function_call") is not None:
            raise ValueError(_LEGACY)
        content = message.get("content")
        parts: tuple[Any, ...] = ()
        if isinstance(content, list):  # content parts: read the text ones, keep any other
            if any(isinstance(p, Mapping) and p.get("type") not in _TEXT_PARTS for p in content):
                parts = tuple(content)
            content = _text(content)
        calls = tuple(
            ToolCall(id=call.get("id", ""), name=call.get("function", {}).get("name", ""),
                     arguments=_arguments(call.get("function", {}).get("arguments")))
            for call in message.get("tool_calls") or ()
        )  # fmt: skip
        return cls(role=message.get("role"), content=content, tool_calls=calls,
                   tool_call_id=message.get("tool_call_id"), parts=parts)  # fmt: skip

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role="user", content=content)

    @classmethod
    def assistant(cls, content: str | None, tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(cls, tool_call_id: str, content: str) -> Message:
        return cls(role="tool", content=content, tool_call_id=tool_call_id)


class Tool(BaseModel):
    """A function the model may call; ``parameters`` is its JSON Schema."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The ``tools`` entry of a chat-completions request."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class Reply(BaseModel):
    """The model's answer: text, tool calls, or both."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    model: str = ""

    def as_message(self) -> Message:
        """The assistant message to append to the conversation."""
        return Message.assistant(self.content, self.tool_calls)


@runtime_checkable
class LLM(Protocol):
    """A chat model behind an OpenAI-compatible API.

    Adapters raise ``LLMUnavailable`` when the endpoint is down (after their retries) and
    ``LLMBadResponse`` when it answers with something that does not parse.
    """

    def chat(self, messages: Sequence[Message], *, tools: Sequence[Tool] = ()) -> Reply: ...

    def structured(self, messages: Sequence[Message], output: type[Out], *, name: str) -> Out:
        """Ask for JSON matching ``output``'s schema and return it parsed."""
        ...

    def close(self) -> None: ...
