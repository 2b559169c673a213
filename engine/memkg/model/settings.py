"""Settings of stages that ``EngineConfig`` carries: lifecycle limits and weights, the model.

They live in ``model/`` so the configuration value depends on no stage.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class RecallWeights(BaseModel):
    """The blend ``recall`` ranks by; every component is in [0, 1] and shown in the trace.

    ``total = semantic·w_semantic + recency·w_recency + type_match·w_type_match
    + confidence·w_confidence + relevance·w_relevance``, where recency halves every
    ``half_life_days`` and ``relevance`` is the lexical overlap recall ranked by before it
    had a semantic index (weight 0 by default: ``RecallWeights(semantic=0, relevance=0.5)``
    is that lexical ranking again).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    semantic: float = Field(0.5, ge=0)
    """w1: how close the memory is in meaning (the semantic index: BM25 over text expanded
    with the ontology's labels by default, cosine of embeddings with ``EngineConfig.embedding``)."""
    recency: float = Field(0.2, ge=0)
    """w2: time decay since the memory was observed."""
    type_match: float = Field(0.15, ge=0)
    """w3: the memory is about the kind of thing asked."""
    confidence: float = Field(0.15, ge=0)
    """w4: confidence times the credibility of the source."""
    relevance: float = Field(0.0, ge=0)
    """The share of the query's words and entities the memory contains (lexical)."""
    half_life_days: float = Field(30.0, gt=0)
    min_relevance: float = Field(0.1, ge=0, le=1)
    """Candidates matching the query less than this are not injected at all: the match is the
    larger of ``semantic`` and ``relevance`` among those with a weight (both when neither has
    one)."""
    exclusive: tuple[str, ...] = ("product", "brand")
    """Entity types a memory must not contradict: a query naming ``brand:hp`` rejects memories
    about another brand (and products of another brand)."""


class LifecycleConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    note_max_chars: int = Field(500, gt=0)
    note_confidence: float = Field(0.9, ge=0, le=1)
    """Confidence of what the model saved through the tool (the user said it)."""
    turn_note_ttl: timedelta = timedelta(hours=1)
    """Turn-scope notes expire after this; consolidation drops them as ephemeral."""
    window_turns: int = Field(8, gt=0)
    """Conversation turns (a user message and what answered it) a pruned window keeps."""
    summary_max_chars: int = Field(2_000, gt=200)
    profile_budget: int = Field(1_200, gt=0)
    """Tokens ``render_profile`` may use when the caller gives no budget."""
    recall: RecallWeights = RecallWeights()


class LLMConfig(BaseModel):
    """An OpenAI-compatible endpoint; ``api_key`` never appears in ``repr`` or dumps.

    >>> LLMConfig(model="gpt-4o-mini", api_key="sk-test").api_key
    SecretStr('**********')
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    """None for local servers that want no key."""
    timeout_s: float = Field(30.0, gt=0)
    """How long one attempt may take from the request to the answer's last byte, however the
    answer trickles in (no single read waits longer either)."""
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    """Retries on connection errors, 408/409/429 and 5xx, with the client's backoff."""
    temperature: float | None = Field(0.0, ge=0, le=2)
    max_reply_bytes: int = Field(4 * 1024 * 1024, gt=0)
    """An answer larger than this (after decompression) is refused (``llm.bad_response``)
    before it is read further: a chat completion is a few kilobytes."""


class EmbeddingConfig(BaseModel):
    """An OpenAI-compatible embeddings endpoint for semantic recall (``/v1/embeddings``).

    Without one, recall's semantic index is the embedded default (BM25 over memories expanded
    with the ontology's labels, synonyms and key titles): no network, no model download.

    >>> EmbeddingConfig(model="text-embedding-3-small").dimensions is None
    True
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr | None = None
    """None for local servers that want no key."""
    dimensions: int | None = Field(None, gt=0)
    """Ask the model for vectors of this size (models that support it); None: its default."""
    timeout_s: float = Field(30.0, gt=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    max_retries: int = Field(2, ge=0, le=10)
    batch_size: int = Field(64, gt=0, le=2048)
    """Texts sent in one request."""
