"""Recall: the memories most useful for a query, ranked by a documented blend, with a trace.

Each candidate (a live fact or note) gets five components in [0, 1]:

* semantic: how close it is to the query in meaning, from the engine's semantic index
  (``memkg.semantic``: BM25 over FTS5 by default, embeddings when configured), over the
  memory's document: its text, its key's title, and what the ontology says of the entities it
  names (labels, synonyms, brand and category);
* relevance: the share of the query's terms the memory contains (words, CJK bigrams, and the
  entities both name, products expanded to their brand and category): the lexical ranking;
* recency: ``0.5 ** (age_days / half_life_days)`` since it was observed;
* type match: whether the memory is about the kind of thing asked (same entity category or
  type as the query's entities; ``preference`` for "prefer/like/usually", ``state`` for
  "now/today"); 0.5 when the query gives no cue;
* confidence: the memory's confidence times the credibility of its source.

``total`` is their weighted sum (``LifecycleConfig.recall``; by default
``0.5·semantic + 0.2·recency + 0.15·type_match + 0.15·confidence``). Entity validation comes
first: a memory naming a product or brand (``exclusive`` types) other than the query's is
rejected with the reason, whatever its score. The top ``k`` accepted candidates that match the
query enough (``min_relevance``) are injected.
"""

from __future__ import annotations

import json
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memkg.errors import LLMError
from memkg.lifecycle.entities import EntityIndex
from memkg.lifecycle.inject import quote
from memkg.lifecycle.notes import Note
from memkg.lifecycle.ports import SemanticIndex
from memkg.model.fact import Fact, Source
from memkg.model.settings import RecallWeights

log = logging.getLogger(__name__)

MAX_QUERY = 2_000
"""The longest query recall weighs (characters): what an agent looks for, not a document."""

_STOP = {
    "the",
    "a",
    "an",
    "of",
    "for",
    "to",
    "in",
    "on",
    "and",
    "or",
    "my",
    "me",
    "i",
    "is",
    "are",
    "was",
    "what",
    "which",
    "about",
    "with",
    "do",
    "does",
    "user",
    "it",
    "that",
}
_CUES = {
    "preference": re.compile(
        r"(?i)\b(?:prefer\w*|like[sd]?|favou?rite|usually|want\w*)\b|喜欢|偏好"
    ),
    "state": re.compile(r"(?i)\b(?:now|today|currently|this week|right now)\b|现在|今天|目前"),
}


class Scores(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    relevance: float
    semantic: float
    recency: float
    type_match: float
    confidence: float
    total: float


Standing = Literal["pending", "contested"]
"""Why decisions do not use a fact yet (``RecallCandidate.standing``)."""
_PENDING = "(said, not yet confirmed by the user)"
"""What the text of a fact awaiting the user's confirmation says of it."""
_CONTESTED = "its key holds conflicting claims under human review: assume none of them"
"""Why a claim of a key frozen for review is not injected (as the profile says of it)."""


class RecallCandidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    """Fact or note id."""
    kind: str
    text: str
    entities: tuple[str, ...]
    scores: Scores
    injected: bool
    rejected: str | None = None
    clashes: tuple[str, ...] = ()
    """The entity types (of ``RecallWeights.exclusive``) on which it names other entities
    than the query: why it was rejected, without the entities (what a trace keeps)."""
    standing: Standing | None = None
    """A fact decisions do not use yet: ``pending`` the user's confirmation (injected, its
    text says so), or ``contested``: its key is frozen for review (never injected)."""


class RecallResult(BaseModel):
    """The trace: the query's entities, every candidate with its scores, what was injected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    query_entities: tuple[str, ...]
    weights: RecallWeights
    semantic_index: str
    """What gave the semantic scores (``bm25``, ``embedding:<model>``; ``none`` without one)."""
    semantic_fallback: str | None = None
    """Why the configured index did not score (its model failed: code and message), when the
    fallback index did instead."""
    candidates: tuple[RecallCandidate, ...]
    injected: tuple[str, ...]
    trace_id: str | None = None
    """The stored trace of this recall (``Engine.trace``)."""

    def shown(self, others: int = 10) -> RecallResult:
        """The injected candidates and the ``others`` best of the rest, in rank order: what an
        answer over HTTP or MCP lists (a model's context is no place for every memory of the
        domain; the trace keeps the ranking)."""
        kept, left = [], others
        for candidate in self.candidates:
            if candidate.injected or left > 0:
                kept.append(candidate)
                left -= not candidate.injected
        return self.model_copy(update={"candidates": tuple(kept)})

    def text(self) -> str:
        """The injected memories as quoted lines, for a prompt."""
        chosen = [c for c in self.candidates if c.injected]
        return "\n".join(f"- {quote(c.text)} ({c.kind})" for c in chosen)


def _terms(text: str) -> set[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = {
        w[:-1] if len(w) > 3 and w.endswith("s") else w for w in re.findall(r"[a-z0-9]+", folded)
    }
    cjk = "".join(re.findall(r"[\u4e00-\u9fff]+", folded))
    return (words - _STOP) | {cjk[i : i + 2] for i in range(len(cjk) - 1)}


def _document(item: Fact | Note, index: EntityIndex | None) -> tuple[str, list[str]]:
    if isinstance(item, Note):
        text = item.text
        refs = index.mentions(text) if index else []
    else:
        value = json.dumps(item.value, ensure_ascii=False)
        text = f"{item.key.replace('.', ' ').replace('_', ' ')}: {value}"
        refs = [r for r in re.findall(r"[a-z_]+:[A-Za-z0-9_.\-]+", value)]
        if index:
            refs += [r for r in index.mentions(value) if r not in refs]
    if index:
        labels = [
            index.entities[r].labels[0]
            for r in refs
            if r in index.entities and index.entities[r].labels
        ]
        text = f"{text} ({'; '.join(labels)})" if labels and isinstance(item, Fact) else text
    return text, refs


def _meaning(text: str, refs: list[str], title: str | None, index: EntityIndex | None) -> str:
    """The document the semantic index reads: the text, the key's title, and the ontology's
    words for the entities named."""
    said = [text, *([title] if title else []), *(index.words(refs) if index else [])]
    return " ; ".join(said)


def _distinct(facts: Sequence[Fact]) -> list[Fact | Note]:
    """One fact per (domain, key, value): a value restated in several scopes counts once."""
    best: dict[tuple[str, str, str], Fact] = {}
    for fact in facts:
        slot = (fact.domain, fact.key, json.dumps(fact.value, sort_keys=True))
        held = best.get(slot)
        if held is None or (fact.observed_at, fact.id) > (held.observed_at, held.id):
            best[slot] = fact
    return sorted(best.values(), key=lambda f: f.id)


def recall(
    query: str,
    facts: Sequence[Fact],
    notes: Sequence[Note],
    *,
    k: int,
    now: datetime,
    weights: RecallWeights,
    credibility: Callable[[str, Source], float],
    index: EntityIndex | None,
    semantic: SemanticIndex | None = None,
    user_id: str = "",
    key_title: Callable[[str, str], str | None] | None = None,
    fallback: SemanticIndex | None = None,
    seen: int | None = None,
    standing: Mapping[str, Standing] | None = None,
) -> RecallResult:
    """``credibility(domain, source)``: the weight of a source in a domain, as arbitration
    uses it (``rules/policy.yaml`` over ``EngineConfig.weights``); ``key_title(domain, key)``:
    the key's title in its schema, for the semantic documents. When ``semantic``'s model
    fails (``LLMError``: down, refusing, answering garbage), ``fallback`` scores instead and
    the result says why; without a fallback the error propagates. ``seen``: the event log's
    purge count read before ``facts`` and ``notes`` were (``SemanticIndex.scores``).
    ``standing``: the facts decisions do not use, by id (``pending``, ``contested``; see
    ``RecallCandidate.standing``)."""
    standing = standing or {}
    query_refs = index.mentions(query) if index else []
    asked = index.expand(query_refs) if index else {}
    wanted = _terms(query) | {r for refs in asked.values() for r in refs}
    cues = [kind for kind, pattern in _CUES.items() if pattern.search(query)]
    items = [*_distinct(facts), *notes]
    documents = [_document(item, index) for item in items]
    closeness: Mapping[str, float] = {}
    used, why = semantic, None
    if semantic is not None and items:
        meanings = [
            (item.id, _meaning(text, refs, _title(item, key_title), index))
            for item, (text, refs) in zip(items, documents, strict=True)
        ]
        asked_for = _meaning(query, query_refs, None, index)
        try:
            closeness = semantic.scores(user_id, asked_for, meanings, seen=seen)
        except LLMError as exc:
            if fallback is None:
                raise
            used, why = fallback, f"{exc.code}: {exc.message}"
            log.warning("semantic index %s failed (%s); %s scored", semantic.name, exc.code,
                        fallback.name)  # fmt: skip
            closeness = fallback.scores(user_id, asked_for, meanings, seen=seen)
    matchers = [w for w in ("semantic", "relevance") if getattr(weights, w) > 0]
    scored: list[tuple[float, str, RecallCandidate, float]] = []
    for item, (text, refs) in zip(items, documents, strict=True):
        roles = index.expand(refs) if index else {}
        have = _terms(text) | {r for found in roles.values() for r in found}
        relevance = len(wanted & have) / len(wanted) if wanted else 0.0
        close = _unit(closeness.get(item.id, 0.0))
        match = {"semantic": close, "relevance": relevance}
        matched = max(match[m] for m in matchers or match)
        age_days = max((now - item.observed_at).total_seconds() / 86400, 0.0)
        recency = 0.5 ** (age_days / weights.half_life_days)
        kind = item.kind.value if isinstance(item, Fact) else "note"
        checks = []
        if asked and roles:
            shared = {t for t in asked if t in roles and asked[t] & roles[t]}
            checks.append(1.0 if shared else 0.0)
        if cues:
            checks.append(1.0 if kind in cues or (kind == "note" and "preference" in cues) else 0.0)
        type_match = sum(checks) / len(checks) if checks else 0.5
        confidence = item.confidence * credibility(item.domain, item.source)
        total = (
            weights.semantic * close
            + weights.relevance * relevance
            + weights.recency * recency
            + weights.type_match * type_match
            + weights.confidence * confidence
        )
        clashing = [t for t in weights.exclusive
                    if asked.get(t) and roles.get(t) and not asked[t] & roles[t]]  # fmt: skip
        clash = [
            f"names {', '.join(sorted(roles[t]))}, the query {', '.join(sorted(asked[t]))}"
            for t in clashing
        ]
        scores = Scores(
            relevance=round(relevance, 4),
            semantic=round(close, 4),
            recency=round(recency, 4),
            type_match=round(type_match, 4),
            confidence=round(confidence, 4),
            total=round(total, 4),
        )
        held = standing.get(item.id)
        if held == "contested":
            clash.append(_CONTESTED)
        candidate = RecallCandidate(
            ref=item.id,
            kind=kind,
            text=f"{text} {_PENDING}" if held == "pending" else text,
            entities=tuple(refs),
            scores=scores,
            injected=False,
            rejected="; ".join(clash) or None,
            clashes=tuple(clashing),
            standing=held,
        )
        scored.append((-round(total, 4), item.id, candidate, matched))
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    ranked: list[RecallCandidate] = []
    chosen: list[str] = []
    for _, _, candidate, matched in scored:
        ok = candidate.rejected is None and matched >= weights.min_relevance
        if ok and len(chosen) < k:
            candidate = candidate.model_copy(update={"injected": True})
            chosen.append(candidate.ref)
        ranked.append(candidate)
    return RecallResult(
        query=query,
        query_entities=tuple(query_refs),
        weights=weights,
        semantic_index=used.name if used is not None else "none",
        semantic_fallback=why,
        candidates=tuple(ranked),
        injected=tuple(chosen),
    )


def _unit(score: float) -> float:
    """``score`` in [0, 1]; NaN (a vector of NaN, a broken index) is no closeness at all."""
    return 0.0 if math.isnan(score) else min(max(score, 0.0), 1.0)


def _title(item: Fact | Note, key_title: Callable[[str, str], str | None] | None) -> str | None:
    if isinstance(item, Note) or key_title is None:
        return None
    return key_title(item.domain, item.key)
