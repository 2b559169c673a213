"""A user's graph as plain data and back: the graph part of a snapshot.

What a ``UserGraph`` adds to its memory's fold (the memory's part is ``events.snapshot``'s):
the signals, in the order folded, and the counters that date its ``claims_of`` entries and
what is kept of each key (``key_mark``). The
dataset, the entity edge index and each fact's targets are built on first use, as after a
fold. Signals are read back as ``fold_rows`` reads them from their rows (``row_signal``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memkg.graph.projection import UserGraph
from memkg.graph.signals import signal_record


def graph_state(graph: UserGraph) -> dict[str, Any]:
    """What ``graph`` keeps besides its memory's fold, as plain data."""
    signals = [(s.event_id, s.seq, s.domain, s.key, s.target, s.entity, s.kind.value,
                s.at.isoformat(), s.session_id) for s in graph.signals]  # fmt: skip
    return {
        "signals": signals,
        "changes": graph._changes,
        "floor": graph._floor,
        "changed_at": list(graph._changed_at.items()),
        "key_changed_at": [[d, k, at] for (d, k), at in graph._key_changed_at.items()],
    }


def restore_graph(graph: UserGraph, state: dict[str, Any]) -> None:
    """Put ``state`` (``graph_state``'s) into ``graph``, new, its memory already restored."""
    if graph.signals or graph.changes:
        raise ValueError("a snapshot restores a new graph")
    for event_id, seq, domain, key, target, entity, kind, at, session in state["signals"]:
        payload = {"key": key, "target": target, "entity": entity, "kind": kind,
                   "session_id": session}  # fmt: skip
        graph._signal(signal_record(event_id, seq, domain, payload, datetime.fromisoformat(at)))
    graph._changes, graph._floor = int(state["changes"]), int(state["floor"])
    graph._changed_at = {domain: int(at) for domain, at in state["changed_at"]}
    # a snapshot kept before the keys' marks were: none, which dates nothing kept wrongly (what
    # is kept of a key is dated by ``changes``, never below the restored count)
    graph._key_changed_at = {(d, k): int(at) for d, k, at in state.get("key_changed_at", ())}
