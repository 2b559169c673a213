"""Per-user snapshots: a user's folded graph kept beside the log, so a user not resident loads
in one read plus the events written after it, instead of folding the whole stream again.

A snapshot is a cache over the log, never the truth, and is used only where it is exactly what
folding the log gives (a property test folds generated streams both ways):

* only the plain stream is kept (no memory switch, no merged ids: those views read other
  streams), with the events the review index and the notes fold, as stored (a load folds
  both from them and the rows after, and reads no history for them later);
* the store keeps it only at an event the stream still holds, and only while no purge or
  erasure happened since the graph was read; erasure and purges delete the user's snapshot
  in their own transaction, and any later purge or erasure retires it (``SnapshotStore``);
* the body carries a digest and its format names the fact, provenance and signal fields and
  the event types: a body that does not check, or a snapshot of another format (another
  release's model), is not read; the log is folded, and the next snapshot replaces it.

Snapshots are written on the write path, never by a read, once ``max(EVERY, version // 8)``
of the user's events were folded since the last: for streams of at least ``LONGEST_UNKEPT``
events, whatever folded them; for streams of at least ``LONGEST_UNKEPT_LOADED``, when a load
folded that many of the log's rows, at the write after it (each later load would fold them
again; a user who writes once per load gets one too). Writing costs a bounded share of the
writes and the tail a load folds stays short.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

import orjson

from memkg.arbitration.claims import silent
from memkg.errors import StoreError
from memkg.events.projection import UserMemory, collector_paused
from memkg.events.snapshot import memory_state, provenance_json, restore_memory
from memkg.events.store import RowStream, SnapshotStore, row_stream, snapshot_store
from memkg.graph.projection import UserGraph
from memkg.graph.signals import SignalRecord
from memkg.graph.snapshot import graph_state, restore_graph
from memkg.model.event import EventType, StoredRow
from memkg.model.fact import Fact, Provenance

EVERY = 64
"""The fewest events folded between two snapshots of one user."""
LONGEST_UNKEPT = 512
"""Streams shorter than this are not kept by the writes of one residency alone: keeping costs
about two writes, and a user written that often while resident is seldom loaded (at 10k facts
in 100-fact users, keeping them made ingest about a tenth slower)."""
LONGEST_UNKEPT_LOADED = 128
"""Streams shorter than this are not kept even after a load folded many of their rows: they
fold about as fast as their snapshot is read back (a 100-fact user of 200 events folds in
about twice the time its snapshot restores in, and keeping it costs about one fold)."""
_DIGEST = 16
_LENGTH = 4
"""Bytes of the length before each part of a body."""


def _format() -> str:
    """The snapshot format: its version and what the state it holds is made of."""
    made_of = [sorted(Fact.model_fields), sorted(Provenance.model_fields),
               sorted(SignalRecord.model_fields), sorted(t.value for t in EventType)]  # fmt: skip
    return "memkg.snapshot/5:" + hashlib.sha256(orjson.dumps(made_of)).hexdigest()[:16]


FORMAT = _format()


class Snapshots:
    """Reads and writes the snapshots of a store that keeps them (``SnapshotStore``)."""

    def __init__(self, store: SnapshotStore, rows: RowStream, kept_types: tuple[str, ...]):
        self._store, self._rows, self._kept_types = store, rows, kept_types
        self._since: weakref.WeakKeyDictionary[UserGraph, tuple[int, int]] = (
            weakref.WeakKeyDictionary()
        )
        """Per graph (while it lives), the events folded into it since the last snapshot (the
        rows its load folded, then the writes), and of those the rows its load folded."""

    @classmethod
    def of(cls, store: object, kept_types: tuple[str, ...]) -> Snapshots | None:
        """The store's snapshots, when it keeps them and hands its rows over, else ``None``."""
        found, rows = snapshot_store(store), row_stream(store)
        if found is None or rows is None:
            return None
        return cls(found, rows, kept_types)

    def restore(self, user_id: str, graph: UserGraph) -> tuple[int, list[StoredRow]] | None:
        """Put the user's snapshot into ``graph`` (new): the version it holds and the rows it
        keeps (the review and note events, ``kept_types``); ``None`` (``graph`` maybe half
        filled: drop it) when there is no snapshot or it does not check."""
        found = self._store.read_snapshot(user_id, FORMAT)
        if found is None:
            return None
        version, seq, body = found
        try:
            # thousands of objects, none of them in a cycle; the decoded state is dropped
            # when ``_restore`` returns, before the collector resumes, so it never scans it
            with collector_paused():
                kept = _restore(graph, body, version, seq)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None
        return None if kept is None else (version, kept)

    def loaded(self, graph: UserGraph, folded: int) -> None:
        """``graph`` was just loaded, folding ``folded`` rows of the log (those after its
        snapshot, or the whole stream): what each load costs until a snapshot is kept."""
        self._since[graph] = (folded, folded)

    def applied(self, graph: UserGraph, purges: int, events: int) -> None:
        """``events`` were just folded into ``graph`` (resident, read at the store's purge
        count ``purges``): keep a snapshot once enough were since the last."""
        since, loaded = self._since.get(graph, (0, 0))
        since += events
        due = max(EVERY, graph.version // 8)
        shortest = LONGEST_UNKEPT_LOADED if loaded >= due else LONGEST_UNKEPT
        if graph.version < shortest or since < due:
            self._since[graph] = (since, loaded)
            return
        self._since[graph] = (0, 0)
        self.keep(graph, purges)

    def keep(self, graph: UserGraph, purges: int) -> bool:
        """Keep ``graph``'s snapshot now (read at the store's purge count ``purges``), whatever
        its length; ``False`` when none is kept."""
        user_id = graph.user_id
        try:
            memory, history = memory_state(_memory(graph), silent)
            state = {"memory": memory, "graph": graph_state(graph),
                     "kept": self._rows.read_rows(user_id, up_to_version=graph.version,
                                                  types=self._kept_types)}  # fmt: skip
            body = encode(state, history)
        except (TypeError, ValueError):  # not a plain stream's, or not JSON: none is kept
            return False
        try:
            kept = self._store.write_snapshot(
                user_id, graph.version, graph.seq, purges, FORMAT, body
            )
        except StoreError:
            return False  # a store that cannot take it now (read-only, busy) folds the log
        if kept:
            self._since[graph] = (0, 0)
        return kept


def _restore(graph: UserGraph, body: bytes, version: int, seq: int) -> list[StoredRow] | None:
    """Put the snapshot ``body`` of the stream at ``version`` (log position ``seq``) into
    ``graph``: the rows it keeps; ``None`` when it was taken elsewhere in the stream."""
    state, history = decode(body)
    memory = state["memory"]
    if (memory["version"], memory["seq"]) != (version, seq):
        return None
    restore_memory(_memory(graph), memory, history)
    restore_graph(graph, state["graph"])
    return [tuple(row) for row in state["kept"]]


def _memory(graph: UserGraph) -> UserMemory:
    memory = graph.memory
    if not isinstance(memory, UserMemory):
        raise TypeError("snapshots keep the fact layer's own fold")
    return memory


def encode(state: dict[str, Any], history: list[bytes]) -> bytes:
    """A snapshot's body: its digest, then ``state`` as JSON and each history document, each
    after its length."""
    parts = [orjson.dumps(state, default=provenance_json), *history]
    body = b"".join(len(part).to_bytes(_LENGTH, "big") + part for part in parts)
    return hashlib.blake2b(body, digest_size=_DIGEST).digest() + body


def decode(blob: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """The state and history documents ``encode`` kept in ``blob``; ``ValueError`` when it
    does not check. The documents are not parsed (``History`` parses them when asked)."""
    digest, body = blob[:_DIGEST], memoryview(blob)[_DIGEST:]
    if hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
        raise ValueError("the snapshot does not match its digest")
    parts, at = [], 0
    while at < len(body):
        length = int.from_bytes(body[at : at + _LENGTH], "big")
        at += _LENGTH
        if length > len(body) - at:
            raise ValueError("a part of the snapshot runs past its end")
        parts.append(body[at : at + length])
        at += length
    if not parts:
        raise ValueError("the snapshot holds no state")
    state: dict[str, Any] = orjson.loads(parts[0])
    return state, [bytes(part) for part in parts[1:]]
