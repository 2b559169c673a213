"""``Bm25Index``: the embedded semantic default, BM25 over SQLite FTS5.

Each recall indexes the candidate memories' documents (the memory's text expanded with the
labels, synonyms and descriptions the ontology gives the entities it names, and the key's
title: ``lifecycle.recall`` builds them) in an FTS5 table of a private in-memory SQLite
database, Porter-stemmed, and asks it for ``bm25()`` of the query's terms OR-ed. Scores are
divided by the best one, so the closest memory scores 1 and a memory sharing no term 0.

What it can do: find "my kid's breathing" in ``condition:asthma`` because the ontology lists
"breathing problems" among asthma's synonyms; match across inflections ("printers",
"printer") and Chinese text by bigrams. What it cannot: relate words nobody wrote down
(a paraphrase no label or synonym covers scores 0) or weigh one synonym against another. An
embedding model (``EngineConfig.embedding``) does that.

Nothing of a user is kept: the in-memory database holds the background (the ontology's
entity descriptions) and each query's memories only inside a transaction rolled back when the
query is answered, so an erased user leaves nothing in it (and nothing ever reaches a file).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence

from memkg.semantic.tokens import index_terms


class Bm25Index:
    """BM25 (FTS5's: k1 = 1.2, b = 0.75) of the query against the documents given.

    ``background``: texts indexed beside every query's documents but never scored (the
    engine gives the ontology's entity descriptions). They make the collection statistics
    mean something for a user with a handful of memories: BM25's inverse document frequency
    is zero for a term in half the documents, and would silence "ink" among four memories
    about printers.
    """

    name = "bm25"

    def __init__(self, background: Sequence[str] = ()) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(ref UNINDEXED, body,"
            " tokenize = 'porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO docs (ref, body) VALUES (NULL, ?)",
            [(" ".join(index_terms(text)),) for text in background],
        )

    def scores(
        self, user_id: str, query: str, documents: Sequence[tuple[str, str]],
        *, seen: int | None = None,
    ) -> Mapping[str, float]:  # fmt: skip
        """``{ref: score in [0, 1]}`` for documents ``(ref, text)`` sharing a term with
        ``query``; the others are left out (score 0)."""
        del user_id, seen  # the documents are the user's already; nothing is kept per user
        wanted = sorted(set(index_terms(query)))
        if not wanted or not documents:
            return {}
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in wanted)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT INTO docs (ref, body) VALUES (?, ?)",
                    [(ref, " ".join(index_terms(text))) for ref, text in documents],
                )
                rows = self._db.execute(
                    "SELECT ref, -bm25(docs) FROM docs WHERE docs MATCH ? AND ref IS NOT NULL",
                    (match,),
                ).fetchall()
            finally:
                self._db.execute("ROLLBACK")  # the memories leave the index with the query
        found: dict[str, float] = {}
        for ref, score in rows:
            found[ref] = max(found.get(ref, 0.0), float(score))
        best = max(found.values(), default=0.0)
        if best <= 0:
            return {}
        return {ref: score / best for ref, score in found.items() if score > 0}

    def close(self) -> None:
        with self._lock:
            self._db.close()
