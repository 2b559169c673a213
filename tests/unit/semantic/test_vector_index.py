"""``VectorIndex``: a memory is embedded once, the query every time, scores are cosines."""

from __future__ import annotations

import pytest

from memkg.llm.embedder import Embedder, HashingEmbedder
from memkg.semantic import MemoryVectorStore, VectorIndex, VectorStore

DOCS = [("a", "printer ink cartridges"), ("b", "aisle seat on long flights"), ("c", "")]


def test_the_twins_satisfy_their_ports() -> None:
    assert isinstance(HashingEmbedder(), Embedder)
    assert isinstance(MemoryVectorStore(), VectorStore)


def test_scores_are_floored_cosines_and_documents_are_embedded_once() -> None:
    embedder, store = HashingEmbedder(dimensions=512), MemoryVectorStore()
    index = VectorIndex(embedder, store)
    first = index.scores("u1", "ink for the printer", DOCS, seen=0)
    assert index.name == "embedding:hashing-512"
    assert first["a"] > 0.4 and first["b"] == 0.0 and first["c"] == 0.0
    assert embedder.calls == [3, 1] and store.count("u1") == 3
    again = index.scores("u1", "ink for the printer", DOCS, seen=0)
    assert again == pytest.approx(first) and embedder.calls == [3, 1, 1]
    index.scores("u2", "ink", DOCS[:1], seen=0)  # vectors are kept per user: u2's are its own
    assert embedder.calls[-2:] == [1, 1] and store.count("u2") == 1


def test_a_changed_memory_gets_a_new_vector() -> None:
    embedder, store = HashingEmbedder(), MemoryVectorStore()
    index = VectorIndex(embedder, store)
    index.scores("u1", "seat", [("a", "aisle seat")], seen=0)
    index.scores("u1", "seat", [("a", "window seat")], seen=0)
    assert embedder.calls == [1, 1, 1, 1] and store.count("u1") == 2


def test_an_embedder_that_loses_a_vector_is_a_bad_response() -> None:
    class Lossy(HashingEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:  # type: ignore[override]
            return super().embed(texts)[:-1]

    from memkg import LLMBadResponse

    with pytest.raises(LLMBadResponse, match="2 texts"):
        VectorIndex(Lossy(), MemoryVectorStore()).scores("u1", "q", DOCS[:2])
