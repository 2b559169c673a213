"""The chat-completions wire format: requests out, completions in, strict JSON schemas.

Both adapters go through these functions, so the in-memory twin sees exactly the request the
real endpoint would, and a completion is parsed the same way whoever produced it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from memkg.errors import LLMBadResponse
from memkg.jsontext import read_json
from memkg.llm.port import Message, Out, Reply, Tool, ToolCall


def messages_to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        content = list(message.parts) if message.parts else message.content
        item: dict[str, Any] = {"role": message.role, "content": content}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id is not None:
            item["tool_call_id"] = message.tool_call_id
        wire.append(item)
    return wire


def tools_to_wire(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    return [tool.to_openai() for tool in tools]


def strict_schema(output: type[BaseModel]) -> dict[str, Any]:
    """``output``'s JSON Schema in the subset strict structured output accepts.

    Every object lists all its properties as required and forbids others; defaults go
    (the model must write every field; pydantic still accepts what it writes).
    """

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(item) for item in node]
        if not isinstance(node, dict):
            return node
        fixed = {k: fix(v) for k, v in node.items() if k != "default"}
        if fixed.get("type") == "object" and "properties" in fixed:
            fixed["required"] = list(fixed["properties"])
            fixed["additionalProperties"] = False
        return fixed

    result: dict[str, Any] = fix(output.model_json_schema())
    return result


def response_format(output: type[BaseModel], name: str) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": strict_schema(output), "strict": True},
    }


def reply_from_wire(completion: Any) -> Reply:
    """The first choice of a chat completion (a dict in the wire shape)."""
    try:
        choice = completion["choices"][0]
        message = choice["message"]
        calls = tuple(
            ToolCall(
                id=call["id"],
                name=call["function"]["name"],
                arguments=call["function"].get("arguments") or "{}",
            )
            for call in message.get("tool_calls") or ()
        )
        if message.get("refusal"):
            raise LLMBadResponse(f"the model refused: {message['refusal']}", code="llm.refused")
        return Reply(
            content=message.get("content"),
            tool_calls=calls,
            finish_reason=choice.get("finish_reason") or "stop",
            model=str(completion.get("model") or ""),
        )
    except (KeyError, IndexError, TypeError, AttributeError, ValidationError) as exc:
        raise LLMBadResponse(
            f"not a chat completion ({type(exc).__name__}: {exc}); is the base URL an "
            "OpenAI-compatible /v1 endpoint?"
        ) from exc


def parse_output(reply: Reply, output: type[Out], name: str) -> Out:
    """The structured answer in ``reply``, validated by ``output``."""
    if reply.finish_reason == "length":
        raise LLMBadResponse(f"{name}: the answer was cut off (finish_reason=length)")
    if not reply.content:
        raise LLMBadResponse(f"{name}: the model returned no content")
    try:
        parsed = output.model_validate_json(reply.content)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "$"
        raise LLMBadResponse(
            f"{name}: the answer does not match its schema ({first['msg']} at {where}): "
            f"{_clip(reply.content)}"
        ) from exc
    try:  # what was checked is what every reader of the answer reads: no key given twice
        read_json(reply.content)
    except ValueError as exc:
        raise LLMBadResponse(
            f"{name}: the answer cannot be used ({exc}): {_clip(reply.content)}"
        ) from exc
    return parsed


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept (for prompts and tool results)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
