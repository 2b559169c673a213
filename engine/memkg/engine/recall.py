"""Recall, wired: the memories most useful for a query, ranked with a semantic index (BM25 over
FTS5 by default, or an embeddings endpoint's vectors kept beside the events)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memkg import semantic
from memkg.arbitration.resolution import Outcome, Resolution, Standing
from memkg.clock import Clock
from memkg.engine.setup import Setup, check_args, check_count
from memkg.errors import InvalidOperation
from memkg.events.store import Companion, EventStore, beside
from memkg.lifecycle import recall
from memkg.lifecycle.entities import EntityIndex
from memkg.lifecycle.notes import Note
from memkg.lifecycle.ports import SemanticIndex
from memkg.lifecycle.recall import Standing as NotUsedYet
from memkg.model.fact import Fact, FactStatus
from memkg.model.settings import RecallWeights
from memkg.model.weight import credibility_of
from memkg.once import once


@dataclass(eq=False, repr=False)
class Recall:
    """Ranked recall with its trace, and the index behind it; see ``memkg.Engine``."""

    facts: Callable[[str, str | None, str | None], list[Fact]]
    """The user's facts reads in a session (or outside every session) take in
    (``Reads.facts_in``)."""
    notes: Callable[[str, str | None], list[Note]]
    resolved: Callable[..., list[Resolution]]
    """Every key slot's resolution for a user, domain and session (``Arbiter.resolved_facts``):
    which claims hold."""
    setup: Setup
    store: EventStore
    clock: Clock

    def recall(
        self, user_id: str, query: str, k: int = 5, *, domain: str | None = None,
        session_id: str | None = None, weights: RecallWeights | None = None,
    ) -> recall.RecallResult:  # fmt: skip
        """The ``k`` memories most useful for ``query``, with the full ranking trace.

        ``session_id``: the session recalling, whose notes take part beside long-term memory;
        other sessions' notes and turn instructions never do (they count only there). Free-text
        notes are those ``render_profile`` shows for the session.
        ``weights`` replaces ``config.lifecycle.recall`` for this call (e.g. the lexical
        ranking: ``RecallWeights(semantic=0, relevance=0.5)``).
        """
        check_args(user_id=user_id, query=query, domain=domain, session_id=session_id)
        check_count(k, "k", 0, "how many memories to inject", code="recall.k")
        if len(query) > recall.MAX_QUERY:  # each word of it is weighed against every memory
            raise InvalidOperation(f"the query is {len(query):,} characters, past "
                                   f"{recall.MAX_QUERY:,}: recall with what the agent looks "
                                   "for, not a document", code="recall.query")  # fmt: skip
        reader = self.setup.reader
        seen = self.store.stream_mark(user_id)[1]  # before memory is read (``VectorStore.put``)
        notes = [n for n in self.notes(user_id, domain) if n.shown_in(session_id)]
        facts = self.facts(user_id, domain, session_id)
        return recall.recall(
            query, facts, notes, k=k, standing=self._standing(user_id, facts, session_id),
            now=self.clock.now(), weights=weights or self.setup.config.lifecycle.recall,
            credibility=lambda domain, source: credibility_of(reader.params(domain), source),
            index=self.entity_index, semantic=self.semantic_index, user_id=user_id,
            key_title=self._key_title, fallback=self.lexical_index, seen=seen,
        )  # fmt: skip

    def _standing(
        self, user_id: str, facts: list[Fact], session_id: str | None
    ) -> dict[str, NotUsedYet]:
        """Of ``facts``, those ``resolve``, decisions and the profile do not use, by id: a fact
        awaiting the user's confirmation (``pending``), either side of a slot frozen for review
        (``contested``). A claim another outranks is not among them: recall ranks long-term
        memory beside the session's."""
        found: dict[str, NotUsedYet] = {
            f.id: "pending" for f in facts if f.status is FactStatus.PENDING_CONFIRMATION
        }
        for domain in sorted({f.domain for f in facts}):
            for resolution in self.resolved(user_id, domain, session_id=session_id):
                if resolution.outcome is Outcome.FROZEN:
                    found.update((c.fact_id, "contested") for c in resolution.claims
                                 if c.standing is Standing.CONTESTED)  # fmt: skip
        return found

    def _key_title(self, domain: str, key: str) -> str | None:
        spec = self.setup.registry.spec(domain, key)
        title = spec.schema.get("title") if spec is not None else None
        return title if isinstance(title, str) else None

    @once
    def entity_index(self) -> EntityIndex:
        return EntityIndex.from_graph(self.setup.ontology.knowledge)

    @once
    def semantic_index(self) -> SemanticIndex:
        """BM25 over FTS5 (no network), or ``config.embedding``'s vectors beside the store."""
        config = self.setup.config.embedding
        if config is None:
            return self.lexical_index
        from memkg.llm.openai_adapter import OpenAIEmbedder

        return semantic.VectorIndex(OpenAIEmbedder(config), self.vector_store)

    @once
    def lexical_index(self) -> semantic.Bm25Index:
        """The embedded default; with an embeddings endpoint, what scores while it fails."""
        entities = self.entity_index.entities.values()
        return semantic.Bm25Index([" ; ".join([*e.labels, *e.synonyms]) for e in entities])

    @once
    def vector_store(self) -> semantic.VectorStore:
        """Where the events are: the SQLite file, the PostgreSQL schema, or memory."""
        from memkg.events.postgres import PostgresEventStore
        from memkg.events.sqlite import SqliteEventStore

        if isinstance(self.store, SqliteEventStore):
            from memkg.semantic.sqlite import SqliteVectorStore

            return SqliteVectorStore(self.store.path)
        if isinstance(self.store, PostgresEventStore):
            from memkg.semantic.postgres import PostgresVectorStore

            return PostgresVectorStore(self.store.dsn, schema=self.store.schema)
        return semantic.MemoryVectorStore(self.store.stream_mark)

    def erase_vectors(self, user_id: str) -> None:
        """The user's memory vectors go (after a purge by audit id: re-embedded on demand)."""
        check_args(user_id=user_id)
        if self.setup.config.embedding is not None or _keeps_vectors(self.store):
            self.vector_store.erase_user(user_id)

    def before_erasure(self, ids: Sequence[str]) -> tuple[Companion, ...]:
        """Erasure reaches the memory vectors of every id it touches (a person's ids, and ids
        once linked to it: their views may have read it; vectors are re-embedded on demand):
        in its own transaction when they live beside the events (the store is returned to
        join it), now otherwise."""
        check_args(ids=list(ids))
        if self.setup.config.embedding is not None or _keeps_vectors(self.store):
            vectors = self.vector_store
            if isinstance(vectors, Companion) and beside(self.store, vectors):
                return (vectors,)
            for one in ids:
                vectors.erase_user(one)
        return ()

    def before_purge(self, user_id: str, _fact_ids: Sequence[str]) -> tuple[Companion, ...]:
        """A purge by audit id drops the user's vectors (re-embedded on demand), as an
        erasure does (``before_erasure``)."""
        return self.before_erasure([user_id])

    def close(self) -> None:
        """Close the index and the vector store, if they were built."""
        if isinstance(index := self.__dict__.get("semantic_index"), semantic.VectorIndex):
            index.embedder.close()
        if (lexical := self.__dict__.get("lexical_index")) is not None:
            lexical.close()
        if (vectors := self.__dict__.get("vector_store")) is not None:
            vectors.close()


def _keeps_vectors(store: object) -> bool:
    """Whether vectors may be in the store's file or schema from an engine with embeddings."""
    from memkg.events.postgres import PostgresEventStore
    from memkg.events.sqlite import SqliteEventStore

    return isinstance(store, SqliteEventStore | PostgresEventStore)
