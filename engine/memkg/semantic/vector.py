"""``VectorIndex``: semantic scores from an ``Embedder``'s vectors, kept in a ``VectorStore``.

A memory's document is embedded once (its vector is stored under a digest of the model and
the text); each query is embedded on every recall and never stored. A score is the cosine of
the query's vector with the memory's, floored at 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memkg.errors import LLMBadResponse, StoreError
from memkg.llm.embedder import Embedder
from memkg.semantic.store import VectorStore, cosine, pack, text_digest, unpack


class VectorIndex:
    def __init__(self, embedder: Embedder, store: VectorStore) -> None:
        self.embedder = embedder
        self.store = store

    @property
    def name(self) -> str:
        return f"embedding:{self.embedder.model}"

    def scores(
        self, user_id: str, query: str, documents: Sequence[tuple[str, str]],
        *, seen: int | None = None,
    ) -> Mapping[str, float]:  # fmt: skip
        """``{ref: max(cosine, 0)}`` for every document ``(ref, text)``.

        New vectors are kept while the event log's purge count is still ``seen``, read before
        the documents were (``VectorStore.put``); without it none are kept."""
        if not documents:
            return {}
        model = self.embedder.model
        digests = {ref: text_digest(model, text) for ref, text in documents}
        texts = {digests[ref]: text for ref, text in documents}
        stored = self.store.get(user_id, model, texts)
        missing = [d for d in texts if d not in stored]
        vectors = self._embed([texts[d] for d in missing]) if missing else []
        made = {d: unpack(pack(v)) for d, v in zip(missing, vectors, strict=True)}
        if made and seen is not None:
            try:
                self.store.put(user_id, model, made, seen)
            except StoreError as exc:  # a read-only file, or a lock held past its timeout,
                if exc.code not in ("store.read_only", "store.locked"):  # still recalls
                    raise
        [asked] = self._embed([query])
        close = self.store.similarities(user_id, model, asked, set(stored))
        close.update({d: cosine(asked, v) for d, v in made.items()})
        return {ref: max(close.get(d, 0.0), 0.0) for ref, d in digests.items()}

    def _embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self.embedder.embed(texts)
        if len(vectors) != len(texts):
            raise LLMBadResponse(
                f"embedder {self.embedder.model} gave {len(vectors)} vectors for {len(texts)} texts"
            )
        return vectors
