"""``OpenAIEmbedder`` against an endpoint whose vectors hold numbers no cosine can use."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from memkg import EmbeddingConfig, LLMBadResponse
from memkg.llm.openai_adapter import OpenAIEmbedder
from support.openai_server import OpenAIServer


class _Poisoned(OpenAIServer):
    """Answers embeddings whose first number is ``value`` (NaN and Infinity as Python's JSON
    writes them, which the client reads)."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, bytes]:
        status, payload = super()._embeddings(body)
        answer = json.loads(payload)
        answer["data"][-1]["embedding"][0] = self.value
        return status, json.dumps(answer).encode()


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["NaN", "inf", "-inf"])
def test_a_vector_with_a_number_that_is_not_finite_is_a_bad_response(value: float) -> None:
    with _Poisoned(value) as server:
        config = EmbeddingConfig(base_url=server.base_url, model="m", api_key="k", max_retries=0)
        with OpenAIEmbedder(config) as embedder, pytest.raises(LLMBadResponse) as caught:
            embedder.embed(["asthma", "inhaler at night"])
    assert "not finite" in caught.value.message and server.base_url in caught.value.message
