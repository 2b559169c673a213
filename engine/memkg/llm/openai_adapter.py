"""The ``LLM`` port over the official ``openai`` client: the only module that imports it.

Any OpenAI-compatible endpoint works (OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp).
Failures become memkg errors a caller can act on::

    connection refused, timeout, 408/409/429/5xx after retries  ->  LLMUnavailable
    200 with a body that is not a completion, or invalid JSON   ->  LLMBadResponse
    other 4xx (bad key, unknown model, bad request)             ->  LLMError (llm.rejected)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai

from memkg.errors import LLMBadResponse, LLMError, LLMUnavailable
from memkg.llm.port import Message, Out, Reply, Tool
from memkg.llm.wire import messages_to_wire, parse_output, reply_from_wire, response_format
from memkg.llm.wire import tools_to_wire as _tools
from memkg.model.settings import LLMConfig

_NO_KEY = "not-needed"
"""Sent when the config has no key: local servers ignore it, and the client never falls back
to reading ``OPENAI_API_KEY`` from the environment (configuration is a value)."""


class OpenAIChat:
    """Chat completions through ``openai.OpenAI``, with the config's timeouts and retries."""

    def __init__(self, config: LLMConfig, *, client: openai.OpenAI | None = None) -> None:
        self.config = config
        key = config.api_key.get_secret_value() if config.api_key is not None else _NO_KEY
        self._client = client or openai.OpenAI(
            api_key=key,
            base_url=config.base_url,
            timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
            max_retries=config.max_retries,
        )

    def chat(self, messages: Sequence[Message], *, tools: Sequence[Tool] = ()) -> Reply:
        extra: dict[str, Any] = {"tools": _tools(tools)} if tools else {}
        return self._complete(messages, extra)

    def structured(self, messages: Sequence[Message], output: type[Out], *, name: str) -> Out:
        reply = self._complete(messages, {"response_format": response_format(output, name)})
        return parse_output(reply, output, name)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _complete(self, messages: Sequence[Message], extra: dict[str, Any]) -> Reply:
        if self.config.temperature is not None:
            extra["temperature"] = self.config.temperature
        where = f"{self.config.base_url} (model {self.config.model})"
        try:
            completion = self._client.chat.completions.create(
                model=self.config.model,
                messages=messages_to_wire(messages),  # type: ignore[arg-type]
                **extra,
            )
        except openai.APITimeoutError as exc:
            raise LLMUnavailable(
                f"{where} did not answer within {self.config.timeout_s:g} s "
                f"({self.config.max_retries} retries)",
                code="llm.timeout",
            ) from exc
        except openai.APIConnectionError as exc:
            raise LLMUnavailable(
                f"cannot reach {where}: {exc} ({self.config.max_retries} retries); "
                "check base_url and that the server is up"
            ) from exc
        except openai.APIResponseValidationError as exc:
            raise LLMBadResponse(f"{where} answered with an invalid body: {exc}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in (408, 409, 429) or status >= 500:
                raise LLMUnavailable(
                    f"{where} answered HTTP {status} after {self.config.max_retries} retries: "
                    f"{exc.message}"
                ) from exc
            raise LLMError(
                f"{where} refused the request (HTTP {status}): {exc.message}",
                code="llm.rejected",
            ) from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{where}: {exc}") from exc
        except ValueError as exc:  # a 200 whose JSON body does not decode
            raise LLMBadResponse(f"{where} answered with a body that is not JSON: {exc}") from exc
        dump = getattr(completion, "model_dump", None)
        if not callable(dump):
            raise LLMBadResponse(
                f"{where} answered with something that is not a chat completion: "
                f"{str(completion)[:200]!r}"
            )
        return reply_from_wire(dump(mode="json"))
