"""The ``LLM`` and ``Embedder`` ports over the official ``openai`` client: the only module
that imports it.

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
from memkg.model.settings import EmbeddingConfig, LLMConfig

_NO_KEY = "not-needed"
"""Sent when the config has no key: local servers ignore it, and the client never falls back
to reading ``OPENAI_API_KEY`` from the environment (configuration is a value)."""


def _client(config: LLMConfig | EmbeddingConfig) -> openai.OpenAI:
    """A client with the config's endpoint, key, timeouts and retries."""
    key = config.api_key.get_secret_value() if config.api_key is not None else _NO_KEY
    return openai.OpenAI(
        api_key=key,
        base_url=config.base_url,
        timeout=openai.Timeout(config.timeout_s, connect=config.connect_timeout_s),
        max_retries=config.max_retries,
    )


class OpenAIChat:
    """Chat completions through ``openai.OpenAI``, with the config's timeouts and retries."""

    def __init__(self, config: LLMConfig, *, client: openai.OpenAI | None = None) -> None:
        self.config = config
        self._client = client or _client(config)

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
        except (openai.OpenAIError, ValueError) as exc:
            raise _failure(exc, where, self.config.timeout_s, self.config.max_retries) from exc
        dump = getattr(completion, "model_dump", None)
        if not callable(dump):
            raise LLMBadResponse(
                f"{where} answered with something that is not a chat completion: "
                f"{str(completion)[:200]!r}"
            )
        return reply_from_wire(dump(mode="json"))


class OpenAIEmbedder:
    """``/v1/embeddings`` through ``openai.OpenAI``: the ``Embedder`` port on a real model."""

    def __init__(self, config: EmbeddingConfig, *, client: openai.OpenAI | None = None) -> None:
        self.config = config
        self._client = client or _client(config)

    @property
    def model(self) -> str:
        size = f"@{self.config.dimensions}" if self.config.dimensions else ""
        return f"{self.config.model}{size}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        step = self.config.batch_size
        for start in range(0, len(texts), step):
            vectors += self._batch(list(texts[start : start + step]))
        return vectors

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _batch(self, texts: list[str]) -> list[list[float]]:
        where = f"{self.config.base_url} (embedding model {self.config.model})"
        extra: dict[str, Any] = {}
        if self.config.dimensions is not None:
            extra["dimensions"] = self.config.dimensions
        try:
            answer = self._client.embeddings.create(
                model=self.config.model, input=texts, encoding_format="float", **extra
            )
        except (openai.OpenAIError, ValueError) as exc:
            raise _failure(exc, where, self.config.timeout_s, self.config.max_retries) from exc
        data = getattr(answer, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            got = len(data) if isinstance(data, list) else "no list of"
            raise LLMBadResponse(f"{where} answered {got} embeddings for {len(texts)} texts")
        ordered = sorted(data, key=lambda item: getattr(item, "index", 0))
        vectors = [getattr(item, "embedding", None) for item in ordered]
        sizes = {len(v) if isinstance(v, list) else -1 for v in vectors}
        if len(sizes) != 1 or min(sizes) < 1:
            raise LLMBadResponse(f"{where} answered embeddings that are not vectors of one size")
        try:
            return [[float(x) for x in vector] for vector in vectors if isinstance(vector, list)]
        except (TypeError, ValueError) as exc:
            raise LLMBadResponse(f"{where} answered an embedding that is not numbers") from exc


def _failure(exc: Exception, where: str, timeout_s: float, retries: int) -> LLMError:
    """The memkg error for a failed call (see the module docstring)."""
    if isinstance(exc, openai.APITimeoutError):
        return LLMUnavailable(
            f"{where} did not answer within {timeout_s:g} s ({retries} retries)",
            code="llm.timeout",
        )
    if isinstance(exc, openai.APIConnectionError):
        return LLMUnavailable(
            f"cannot reach {where}: {exc} ({retries} retries); "
            "check base_url and that the server is up"
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMBadResponse(f"{where} answered with an invalid body: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in (408, 409, 429) or status >= 500:
            return LLMUnavailable(
                f"{where} answered HTTP {status} after {retries} retries: {exc.message}"
            )
        return LLMError(
            f"{where} refused the request (HTTP {status}): {exc.message}", code="llm.rejected"
        )
    if isinstance(exc, openai.OpenAIError):
        return LLMError(f"{where}: {exc}")
    # a 200 whose JSON body does not decode
    return LLMBadResponse(f"{where} answered with a body that is not JSON: {exc}")
