"""How close a memory is to a query in meaning: recall's semantic index.

Two implementations of one port (``lifecycle.ports.SemanticIndex``): ``lexical.Bm25Index``,
the embedded default (BM25 over SQLite FTS5, on memories expanded with the ontology's labels,
synonyms and key titles: no network, no model), and ``vector.VectorIndex`` (an ``Embedder``'s
vectors, kept in a ``VectorStore`` beside the memory: ``memory``, ``sqlite``, ``postgres``).
"""

from memkg.semantic.lexical import Bm25Index
from memkg.semantic.store import MemoryVectorStore, VectorStore
from memkg.semantic.vector import VectorIndex

__all__ = ["Bm25Index", "MemoryVectorStore", "VectorIndex", "VectorStore"]
