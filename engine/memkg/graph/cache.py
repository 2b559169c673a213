"""Per-user graphs, cached by the user's stream mark and kept current event by event.

Work is per user: a write folds its events into that user's cached graph only; a read
rebuilds a user's graph from that user's stream when the cached one is behind (another process
wrote) and touches no one else. The weighted view is memoised per user for one (version,
time, domain, weight parameters) at a time, since weights move with time; a view for a new
time reuses the graph's live claims (``UserGraph.claims_of``) and only redoes the arithmetic.
The cache holds graphs whose estimated memory (``UserGraph.estimated_bytes``, refreshed each
time a user's graph is read or written) stays within ``max_bytes``, and at most ``max_users``
graphs (``None``: no count bound here, the owner evicts with ``forget``): least recently used
first out, never the graph being served. An evicted user's graph is rebuilt from the user's
stream when next read.

A graph is current while the store's ``stream_mark`` (the stream version and the store's
purge count) is what it was read at: another process's append changes the version, and the
graph folds the events after its own (``tail``, from the owner) when they follow it, or is
read again when they cannot (a switch or link event, a joined view); a purge drops it. The
owner still calls ``forget`` when it rewrites a stream itself (erasure, purge by audit id).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial

from memkg.graph.projection import FactFold, UserGraph
from memkg.graph.view import View, weighted_view
from memkg.model.event import Event
from memkg.model.fact import Fact
from memkg.model.weight import WeightParams

ReadStream = Callable[..., Sequence[Event]]
"""``read_stream(user_id, up_to_seq=None)``: the user's events in order."""
ReadTail = Callable[[FactFold, int], Sequence[Event] | None]
"""``tail(cached, version)``: the events after a cached projection up to the
stream's ``version``, or ``None`` when they cannot be folded onto it."""


class GraphCache:
    def __init__(
        self,
        read_stream: ReadStream,
        stream_mark: Callable[[str], tuple[int, int]],
        new_graph: Callable[[str], UserGraph],
        *,
        max_users: int | None = 1024,
        dropped: Callable[[str], None] = lambda _user: None,
        max_bytes: int | None = None,
        tail: ReadTail = lambda _cached, _version: None,
        load: Callable[[str], UserGraph] | None = None,
    ) -> None:
        self._read = read_stream
        self._load = load or self._fold
        """How a user's graph is folded from scratch (default: ``read_stream``'s events)."""
        self._tail = tail
        self._mark = stream_mark
        self._dropped = dropped
        """Told when a graph leaves for another process's purge or for the bounds (the owner
        drops what it derived from the graph)."""
        self._purges: dict[str, int] = {}
        """The store's purge count each cached graph was read at (``EventStore.stream_mark``)."""
        self._new = new_graph
        self._max = max_users
        self._max_bytes = max_bytes
        self._graphs: OrderedDict[str, UserGraph] = OrderedDict()
        self._bytes: dict[str, int] = {}
        self._total = 0
        self._views: dict[
            str, tuple[tuple[int, int, datetime, str | None, WeightParams], View]
        ] = {}
        self._lock = threading.RLock()

    def get(self, user_id: str) -> UserGraph:
        """The user's current graph (callers must not mutate it)."""
        with self._lock:
            version, purges = self._mark(user_id)
            graph = self._graphs.get(user_id)
            if graph is not None and self._purges.get(user_id) != purges:
                self._dropped(user_id)
                graph = None
            if graph is not None and graph.version != version:
                tail = self._tail(graph.memory, version)  # another process wrote
                if tail is None:
                    graph = None
                else:
                    for event in tail:
                        graph.apply(event)
                    self._views.pop(user_id, None)
            if graph is None:
                graph = self._load(user_id)
                graph.memory.settle(version)
                self._graphs[user_id] = graph
                self._purges[user_id] = purges
                self._views.pop(user_id, None)
                if graph.memory.built != graph.memory.count:
                    # a read may build the history it holds unread: measured again then
                    graph.memory.on_built = partial(self._measure, user_id, graph)
            self._graphs.move_to_end(user_id)
            self._account(user_id, graph)
            return graph

    def _fold(self, user_id: str) -> UserGraph:
        graph = self._new(user_id)
        for event in self._read(user_id):
            graph.apply(event)
        return graph

    @property
    def estimated_bytes(self) -> int:
        """The cached graphs' estimated memory, as last measured."""
        return self._total

    def __len__(self) -> int:
        return len(self._graphs)

    def __contains__(self, user_id: object) -> bool:
        """Whether the user's graph is resident."""
        return user_id in self._graphs

    def resident(self, user_id: str) -> tuple[UserGraph, int] | None:
        """The user's resident graph and the store's purge count it was read at, as they are
        (nothing checked, nothing moved); ``None`` when it is not resident."""
        with self._lock:
            graph = self._graphs.get(user_id)
            return None if graph is None else (graph, self._purges.get(user_id, -1))

    def _measure(self, user_id: str, graph: UserGraph) -> None:
        """Measure ``graph`` again if it is still the user's resident graph.

        A read that built the history the graph held unread calls it, holding none of the
        owner's locks (``Engine.history``, say): the owner's lock is taken before this
        cache's, never after, so the owner is told of the graphs evicted once this cache's
        lock is released (a read holding the owner's lock and waiting for this one would
        otherwise wait for ever, as would this)."""
        gone: list[str] = []
        with self._lock:
            if self._graphs.get(user_id) is graph:
                gone = self._account(user_id, graph, tell=False)
        for other in gone:
            self._dropped(other)

    def _account(self, user_id: str, graph: UserGraph, *, tell: bool = True) -> list[str]:
        """Measure ``user_id``'s graph again, then evict others until the bounds hold: the
        users evicted, the owner told of each (``dropped``) unless ``tell`` is false."""
        size = graph.estimated_bytes()
        self._total += size - self._bytes.get(user_id, 0)
        self._bytes[user_id] = size
        evicted = []
        while len(self._graphs) > 1 and (
            (self._max is not None and len(self._graphs) > self._max)
            or (self._max_bytes is not None and self._total > self._max_bytes)
        ):
            gone = next(iter(self._graphs))  # the served user is the newest
            self.forget(gone)
            evicted.append(gone)
            if tell:
                self._dropped(gone)
        return evicted

    def as_of(self, user_id: str, *, seq: int | None = None, at: datetime | None = None
              ) -> UserGraph:  # fmt: skip
        """The user's graph as of a log position, or as memory stood at a time; not cached."""
        graph = self._new(user_id)
        for event in self._read(user_id, up_to_seq=seq):
            if at is None or event.recorded_at <= at:
                graph.apply(event)
        return graph

    def apply(
        self, user_id: str, events: Sequence[Event], asserted: Mapping[str, Fact] | None = None
    ) -> None:
        """Fold freshly appended events into a cached graph, or drop it if they do not follow;
        ``asserted``: the facts of their ``fact.asserted`` events by event id, already read
        from the payloads appended (``events.projection.asserted_facts``)."""
        with self._lock:
            graph = self._graphs.get(user_id)
            if graph is None or not events:
                return
            if events[0].version != graph.version + 1:
                self.forget(user_id)
                return
            read = asserted or {}
            for event in events:
                graph.apply(event, read.get(event.event_id))
            self._graphs.move_to_end(user_id)
            self._account(user_id, graph)

    def forget(self, user_id: str) -> None:
        with self._lock:
            self._graphs.pop(user_id, None)
            self._views.pop(user_id, None)
            self._total -= self._bytes.pop(user_id, 0)
            self._purges.pop(user_id, None)

    def view(
        self, user_id: str, now: datetime, params: WeightParams, domain: str | None = None
    ) -> tuple[UserGraph, View]:
        with self._lock:
            graph = self.get(user_id)
            key = (graph.version, graph.seq, now, domain, params)
            memo = self._views.get(user_id)
            if memo is None or memo[0] != key:
                memo = self._views[user_id] = (key, weighted_view(graph, now, params, domain))
            return graph, memo[1]
