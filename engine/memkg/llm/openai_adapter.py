"""The ``LLM`` and ``Embedder`` ports over the official ``openai`` client: the only module
that imports it.

Any OpenAI-compatible endpoint works (OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp).
Failures become memkg errors a caller can act on::

    connection refused, timeout, 408/409/429/5xx after retries  ->  LLMUnavailable
    an answer still arriving ``timeout_s`` after the request    ->  LLMUnavailable (llm.timeout)
    200 with a body that is not a completion, or invalid JSON,
    or an answer over ``max_reply_bytes``                       ->  LLMBadResponse
    other 4xx (bad key, unknown model, bad request)             ->  LLMError (llm.rejected)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
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
        config = self.config
        where = f"{config.base_url} (model {config.model})"
        deadline = time.monotonic() + config.timeout_s
        try:
            # the body is read here, piece by piece, against the deadline and the size bound:
            # the client's own timeout bounds each read, not a body that trickles in
            with self._client.chat.completions.with_streaming_response.create(
                model=config.model,
                messages=messages_to_wire(messages),  # type: ignore[arg-type]
                **extra,
            ) as response:
                body = _bounded(response.iter_bytes(), deadline, config, where)
        except LLMError:  # the bounds' own (a ValueError too), said as raised
            raise
        except (openai.OpenAIError, ValueError) as exc:
            raise _failure(exc, where, config.timeout_s, config.max_retries) from exc
        except Exception as exc:  # the transport failing mid-answer (a read timed out, a reset)
            timed_out = "timeout" in type(exc).__name__.casefold()
            raise (_late(where, config.timeout_s) if timed_out else LLMUnavailable(
                f"{where} broke off its answer: {type(exc).__name__}: {exc}"
            )) from exc  # fmt: skip
        try:
            completion = json.loads(body)
        except (UnicodeDecodeError, ValueError) as exc:
            raise LLMBadResponse(f"{where} answered with a body that is not JSON: {exc}") from exc
        if not isinstance(completion, dict):
            raise LLMBadResponse(
                f"{where} answered with something that is not a chat completion: {body[:200]!r}"
            )
        return reply_from_wire(completion)


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
            found = [[float(x) for x in vector] for vector in vectors if isinstance(vector, list)]
        except (TypeError, ValueError) as exc:
            raise LLMBadResponse(f"{where} answered an embedding that is not numbers") from exc
        # the client reads NaN and Infinity from JSON: a vector holding one scores every
        # cosine NaN, and would be stored to do so at every later recall
        if not all(math.isfinite(x) for vector in found for x in vector):
            raise LLMBadResponse(f"{where} answered an embedding holding a number that is not "
                                 "finite (NaN or Infinity)")  # fmt: skip
        return found


def _bounded(pieces: Iterator[bytes], deadline: float, config: LLMConfig, where: str) -> bytes:
    """The body ``pieces`` make, refused once it passes ``deadline`` or the size bound."""
    body, size = [], 0
    for piece in pieces:
        size += len(piece)
        if size > config.max_reply_bytes:
            raise LLMBadResponse(
                f"{where} answered more than {config.max_reply_bytes} bytes; a chat completion "
                "is a few kilobytes (raise LLMConfig.max_reply_bytes if the model's answers "
                "really are this long)"
            )
        if time.monotonic() > deadline:
            raise _late(where, config.timeout_s)
        body.append(piece)
    return b"".join(body)


def _late(where: str, timeout_s: float) -> LLMUnavailable:
    return LLMUnavailable(
        f"{where} did not finish its answer within {timeout_s:g} s", code="llm.timeout"
    )


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
