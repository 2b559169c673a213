"""The ``Embedder`` port: texts in, one vector per text out, in order.

``OpenAIEmbedder`` (in ``openai_adapter``) is the real one; ``HashingEmbedder`` is the
in-memory twin: deterministic vectors from hashed words, so two texts are close exactly when
they share words. It has no notion of meaning and serves tests and wiring only.

>>> embedder = HashingEmbedder(dimensions=16)
>>> [len(v) for v in embedder.embed(["asthma", "inhaler at night"])]
[16, 16]
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Vectors for texts. ``model`` names the model and its settings: vectors of different
    models never meet (stored vectors are keyed by it)."""

    @property
    def model(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raises ``LLMError`` subclasses on failure."""
        ...

    def close(self) -> None: ...


class HashingEmbedder:
    """Feature hashing of lower-cased words into ``dimensions`` signed buckets, L2-normalised."""

    def __init__(self, dimensions: int = 256) -> None:
        if dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        self.dimensions = dimensions
        self.calls: list[int] = []
        """How many texts each call embedded (tests count requests with it)."""

    @property
    def model(self) -> str:
        return f"hashing-{self.dimensions}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return [hashed_vector(text, self.dimensions) for text in texts]

    def close(self) -> None:
        """Nothing to release."""


def hashed_vector(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    folded = unicodedata.normalize("NFKC", text).casefold()
    for word in re.findall(r"\w+", folded):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "big") % dimensions
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector
