"""The ``LLM`` port: chat with tools, and structured output parsed into pydantic models.

Messages, tool calls and replies are frozen values in the OpenAI chat-completions shape, so an
adapter only translates; ``memory.py`` is the in-memory twin, ``openai_adapter.py`` the real one.

>>> Message.user("hello").model_dump(exclude_defaults=True)
{'role': 'user', 'content': 'hello'}
"""

from __future__ import annotations

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


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    @classmethod
    def from_openai(cls, message: Mapping[str, Any]) -> Message:
        """A chat-completions message dict (``{"role": "user", "content": "..."}``, content
        parts, ``tool_calls``) as a ``Message``; fields memkg does not use (``name``) are
        dropped. Raises ``ValueError`` (pydantic's) when the dict is not a message.

        >>> Message.from_openai({"role": "user", "content": [{"type": "text", "text": "hi"}]})
        Message(role='user', content='hi', tool_calls=(), tool_call_id=None)
        """
        content = message.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(
                str(part.get("text", "")) for part in content
                if isinstance(part, Mapping) and part.get("type") == "text"
            )  # fmt: skip
        calls = tuple(
            ToolCall(id=call.get("id", ""), name=call.get("function", {}).get("name", ""),
                     arguments=call.get("function", {}).get("arguments") or "{}")
            for call in message.get("tool_calls") or ()
        )  # fmt: skip
        return cls(role=message.get("role"), content=content, tool_calls=calls,
                   tool_call_id=message.get("tool_call_id"))  # fmt: skip

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
