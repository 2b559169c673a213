"""Semantic recall on an OpenAI-compatible embeddings endpoint, through the real ``openai``
client against the local test server: the adapter, vectors kept beside the events (SQLite,
PostgreSQL) and erased with the user."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import (
    EmbeddingConfig,
    Engine,
    EngineConfig,
    FrozenClock,
    LLMBadResponse,
    LLMError,
    LLMUnavailable,
    NotFound,
)
from memkg.llm.openai_adapter import OpenAIEmbedder
from memkg.semantic.store import cosine
from support.openai_server import DIMENSIONS, OpenAIServer, embedding

USER = "patient-Vr42q"
NOTE = "Retires in 2031 and wants the pension paid monthly"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def _config(server: OpenAIServer, **more: Any) -> EmbeddingConfig:
    return EmbeddingConfig(
        model="test-embed", base_url=server.base_url, api_key="test-key", **more
    )


def _embedding_requests(server: OpenAIServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if "input" in r]


def test_vectors_come_back_in_order_and_in_batches(server: OpenAIServer) -> None:
    texts = ["asthma", "wheezing at night", "printer ink", "a quiet lounge", "retirement"]
    with OpenAIEmbedder(_config(server, batch_size=2, max_retries=0)) as embedder:
        vectors = embedder.embed(texts)
    assert [len(v) for v in vectors] == [DIMENSIONS] * 5
    assert vectors == [pytest.approx(embedding(t)) for t in texts]
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert server.requests[0]["model"] == "test-embed"
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])


def test_dimensions_are_asked_for_and_name_the_model(server: OpenAIServer) -> None:
    with OpenAIEmbedder(_config(server, dimensions=32, max_retries=0)) as embedder:
        [vector] = embedder.embed(["asthma"])
        assert len(vector) == 32 and embedder.model == "test-embed@32"
    assert server.requests[0]["dimensions"] == 32


def test_failures_are_memkg_errors(server: OpenAIServer) -> None:
    with OpenAIEmbedder(_config(server, max_retries=1)) as embedder:
        server.fail_next(2, status=503)
        with pytest.raises(LLMUnavailable, match="HTTP 503 after 1 retries"):
            embedder.embed(["x"])
        server.fail_next(1, status=401)
        with pytest.raises(LLMError) as refused:
            embedder.embed(["x"])
        assert refused.value.code == "llm.rejected"
        server.garbage_next()
        with pytest.raises(LLMBadResponse):
            embedder.embed(["x"])


def _engine(kind: str, tmp_path: Path, clock: FrozenClock, config: EngineConfig,
            request: pytest.FixtureRequest) -> Engine:  # fmt: skip
    if kind == "sqlite":
        return Engine.open(tmp_path / "memkg.db", clock=clock, config=config)
    dsn = request.getfixturevalue("postgres_dsn")
    return Engine.connect(dsn, schema=request.getfixturevalue("pg_schema"), clock=clock,
                          config=config)  # fmt: skip


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_recall_ranks_by_the_endpoint_s_vectors_kept_beside_the_events(
    kind: str, server: OpenAIServer, tmp_path: Path, clock: FrozenClock,
    request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    config = EngineConfig(embedding=_config(server, max_retries=0))
    with _engine(kind, tmp_path, clock, config, request) as engine:
        for text in (NOTE, "Prefers aisle seats", "Likes quiet lounges before long flights"):
            assert engine.save_memory_note(USER, "finance", text, "global").saved
        engine.save_memory_note("someone-else", "finance", NOTE, "global")
        result = engine.recall(USER, "when does she stop working", k=3)
        assert result.semantic_index == "embedding:test-embed"
        best = result.candidates[0]
        assert best.text == NOTE and best.injected and best.scores.semantic > 0.3
        assert best.scores.relevance == 0.0  # no shared word: the vectors found it
        assert len(_embedding_requests(server)) == 2  # the three memories, then the query
        vectors = engine.recalls.vector_store
        assert vectors.count(USER) == 3

        engine.recall(USER, "aisle", k=3)  # stored vectors are reused: only the query is sent
        assert [len(r["input"]) for r in _embedding_requests(server)] == [3, 1, 1]

        engine.recall("someone-else", "pension", k=3)
        engine.erase(USER)
        assert vectors.count(USER) == 0 and vectors.count("someone-else") == 1
        after = engine.recall(USER, "pension", k=3)  # nothing stored: no trace either
        assert after.candidates == () and after.trace_id is None
        assert result.trace_id is not None
        with pytest.raises(NotFound):
            engine.trace(result.trace_id)
    if kind == "sqlite":
        leftovers = [p.name for p in tmp_path.iterdir() if USER.encode() in p.read_bytes()]
        assert leftovers == []


def test_while_the_endpoint_fails_the_embedded_default_scores_and_the_trace_says_why(
    server: OpenAIServer, clock: FrozenClock
) -> None:
    config = EngineConfig(embedding=_config(server, max_retries=0))
    with Engine(clock=clock, config=config) as engine:
        engine.save_memory_note(USER, "travel", "Prefers aisle seats", "global")
        server.fail_next(1, status=401)
        refused = engine.recall(USER, "aisle", k=3)
        assert refused.semantic_index == "bm25" and refused.injected
        assert (refused.semantic_fallback or "").startswith("llm.rejected: ")
        healthy = engine.recall(USER, "aisle", k=3)
        assert healthy.semantic_index == "embedding:test-embed"
        assert healthy.semantic_fallback is None
        server.close()
        down = engine.recall(USER, "aisle seat", k=3)
        assert down.semantic_index == "bm25" and "cannot reach" in (down.semantic_fallback or "")
        assert down.candidates[0].scores.semantic == 1.0


def test_erasing_an_audit_id_drops_that_user_s_vectors(
    server: OpenAIServer, clock: FrozenClock
) -> None:
    config = EngineConfig(embedding=_config(server, max_retries=0))
    with Engine(clock=clock, config=config) as engine:
        engine.ingest({"user_id": USER, "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "dialogue",
                       "provenance": {"audit_log_id": "audit-77"}})  # fmt: skip
        engine.save_memory_note(USER, "travel", "Likes quiet lounges", "global")
        engine.save_memory_note("someone-else", "travel", "Likes quiet lounges", "global")
        for user in (USER, "someone-else"):
            engine.recall(user, "lounge", k=3)
        vectors = engine.recalls.vector_store
        assert (vectors.count(USER), vectors.count("someone-else")) == (2, 1)
        [receipt] = engine.erase_audit_id("audit-77")
        assert receipt.user_id == USER
        assert (vectors.count(USER), vectors.count("someone-else")) == (0, 1)
        again = engine.recall(USER, "lounge", k=3)  # what is left is embedded again
        assert [c.text for c in again.candidates] == ["Likes quiet lounges"]
        assert vectors.count(USER) == 1
