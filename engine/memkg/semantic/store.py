"""The ``VectorStore`` port: a user's memory vectors, kept beside the memory they come from.

Vectors are a cache of what an ``Embedder`` made of a memory's text, keyed by user, model and
a digest of the text (so an unchanged memory is never embedded twice, and a changed one gets a
new vector). Every adapter keeps them where the events are (the SQLite file, the PostgreSQL
schema), scores by cosine in the process (recall scores every candidate of one user, so a
nearest-neighbour index across users would buy nothing), and forgets a user's vectors with
the user (``erase_user``). ``MemoryVectorStore`` is the in-memory twin; one contract test
runs every adapter.
"""

from __future__ import annotations

import hashlib
import math
import threading
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

Mark = Callable[[str], tuple[int, int]]
"""A user's stream version and the log's purge count, read together (``stream_mark``)."""


@runtime_checkable
class VectorStore(Protocol):
    def get(self, user_id: str, model: str, digests: Collection[str]) -> dict[str, list[float]]:
        """The stored vectors among ``digests`` (missing ones left out)."""
        ...

    def put(
        self, user_id: str, model: str, vectors: Mapping[str, Sequence[float]], seen: int
    ) -> bool:
        """Store ``{digest: vector}`` (a digest already stored keeps its vector) while the
        user's stream is there and the event log's purge count is still ``seen``, read before
        the texts were: an erasure or a purge since then may have taken those texts, and
        the vectors would keep what they took (``EventStore.stream_mark``). Whether stored."""
        ...

    def similarities(
        self, user_id: str, model: str, query: Sequence[float], digests: Collection[str]
    ) -> dict[str, float]:
        """Cosine of ``query`` with each stored vector among ``digests``."""
        ...

    def erase_user(self, user_id: str) -> int:
        """Delete every vector of the user, leaving no byte of them; returns how many."""
        ...

    def count(self, user_id: str) -> int: ...

    def files(self) -> list[Path]:
        """The files that hold vectors (none for the memory and PostgreSQL adapters)."""
        ...

    def close(self) -> None: ...


def text_digest(model: str, text: str) -> str:
    """The key of a text's vector under ``model``."""
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


def pack(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32 bytes (how adapters store it)."""
    packed = array("f", vector)
    return packed.tobytes()


def unpack(blob: bytes) -> list[float]:
    values = array("f")
    values.frombytes(blob)
    return values.tolist()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 for a zero vector or vectors of different sizes."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


class MemoryVectorStore:
    """The in-memory twin: vectors in a dict, float32-rounded like the stored ones.

    ``mark`` is the event store's ``stream_mark``; without one every user counts as having a
    stream and the log as never purged."""

    def __init__(self, mark: Mark | None = None) -> None:
        self._vectors: dict[tuple[str, str, str], list[float]] = {}
        self._lock = threading.Lock()
        self._mark: Mark = mark or (lambda _user: (1, 0))

    def get(self, user_id: str, model: str, digests: Collection[str]) -> dict[str, list[float]]:
        with self._lock:
            found = {d: self._vectors.get((user_id, model, d)) for d in digests}
        return {d: list(v) for d, v in found.items() if v is not None}

    def put(
        self, user_id: str, model: str, vectors: Mapping[str, Sequence[float]], seen: int
    ) -> bool:
        version, purges = self._mark(user_id)
        if version == 0 or purges != seen:
            return False
        with self._lock:
            for digest, vector in vectors.items():
                self._vectors.setdefault((user_id, model, digest), unpack(pack(vector)))
        return True

    def similarities(
        self, user_id: str, model: str, query: Sequence[float], digests: Collection[str]
    ) -> dict[str, float]:
        return {d: cosine(query, v) for d, v in self.get(user_id, model, digests).items()}

    def erase_user(self, user_id: str) -> int:
        with self._lock:
            doomed = [k for k in self._vectors if k[0] == user_id]
            for key in doomed:
                del self._vectors[key]
        return len(doomed)

    def count(self, user_id: str) -> int:
        with self._lock:
            return sum(1 for k in self._vectors if k[0] == user_id)

    def files(self) -> list[Path]:
        return []

    def close(self) -> None:
        """Nothing to release."""
