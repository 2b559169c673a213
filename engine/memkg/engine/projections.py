"""Every per-user projection the engine keeps, owned by one object.

The event log is the truth; what is kept here is disposable and rebuilt from it. Each read
compares the user's stream version in the store with the cached one, so a write by another
process is seen on the next read, by folding only the events after the cached version
(``tail``) when the view is the plain stream; a view that joins merged ids also checks the
other ids' versions (``_Joins``); appends made by this engine are folded in (``applied``);
an erased or purged user leaves every cache at once (``forget``). The graphs' estimated bytes
(``max_bytes``) bound who stays resident, and ``max_users``, when set, bounds how many: a user
whose graph leaves leaves every cache, and ``_touch`` is the one place a count evicts.

A user not resident is folded from scratch (``_load``): from the stored rows when the store
hands them over (``events.store.RowStream``) and the view is the user's plain stream, with no
``Event`` built per row; from the view's events otherwise.

A write reads the user's state several times (its own checks, the freeze check, the append)
and must compute and append against one state of the stream: inside ``pinned(user)`` the
thread's reads of the user check the store once, and the write's own appends move the pin.
A write by another process meanwhile makes the append conflict, and the write is computed
again on the fresh state (``events.retry``).

The engine's instance takes the engine's lock as its own: decisions and writes read a graph
under that lock, so a read that catches the graph up with another process's writes (any read
of ``graph``, from any thread) waits for them, and a decision never reads memory past the log
position it records. The graph cache's lock is taken after it, never before (a history build
that evicts tells ``forget`` once the cache's lock is released).

A separate instance over other data (a migration's scratch stream, a replay's past) shares
nothing with the engine's: no position or version can be taken for another's.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from memkg.arbitration.review import Review, fold_review
from memkg.engine.snapshots import Snapshots
from memkg.errors import InvalidOperation
from memkg.events.projection import UserMemory
from memkg.events.store import row_stream
from memkg.graph.cache import GraphCache
from memkg.graph.projection import FactFold, UserGraph
from memkg.graph.view import View
from memkg.identity import IDENTITY_EVENTS, view
from memkg.identity.stream import SWITCH_EVENTS, holds_any
from memkg.lifecycle.notes import NoteBook
from memkg.model.decision import Revisions
from memkg.model.event import Event, EventType, StoredRow
from memkg.model.fact import Fact
from memkg.model.weight import WeightParams

if TYPE_CHECKING:
    from memkg.arbitration import Resolution
    from memkg.arbitration.reader import KeyFacts, MemoryReader
    from memkg.model.keyspec import KeySpec

Upcast = Callable[[Fact], Fact]
PinnedMark = Callable[[], tuple[int, int] | None]
"""What a ``pinned`` block hands back: the stream mark its reads were checked at."""


SEQ_MAX = 2**63 - 1
"""The last log position a store can hold (SQLite's and PostgreSQL's 64-bit integers)."""


def log_position(as_of: object, name: str = "as_of") -> int:
    """``as_of`` if it is a log position (a whole number from 0 to ``SEQ_MAX``; past the log's
    end reads all of it), else ``InvalidOperation`` saying what to send."""
    if type(as_of) is int and 0 <= as_of <= SEQ_MAX:
        return as_of
    raise InvalidOperation(
        f"{name} is a log position, a whole number from 0 to {SEQ_MAX} (e.g. the version a "
        f"read or a write returned), not {as_of!r:.40}",
        code="read.as_of",
    )


def instant(at: object, name: str = "at") -> datetime:
    """``at`` if it is a ``datetime`` with a timezone, else ``InvalidOperation``."""
    if isinstance(at, datetime) and at.utcoffset() is not None:
        return at
    what = "a datetime without a timezone" if isinstance(at, datetime) else f"{at!r:.40}"
    raise InvalidOperation(
        f"{name} is a datetime with a timezone (e.g. datetime(2026, 5, 1, 9, tzinfo=UTC)), "
        f"not {what}",
        code="read.at",
    )


def _as_of(seq: object, at: object) -> dict[str, Any]:
    """A graph's ``seq`` and ``at``, each checked when given (``log_position``, ``instant``)."""
    return {"seq": None if seq is None else log_position(seq),
            "at": None if at is None else instant(at)}  # fmt: skip


class Stream(Protocol):
    """What projections read: one user's events in order, and the stream's version."""

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> Sequence[Event]: ...

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        """The stream's version and the store's purge count, in one lookup."""
        ...


class Projections:
    """The per-user caches: current memory, the contextual graph with its weighted views,
    the review queue's entries, and the live facts decisions read; and the revision record
    of each rule bundle used."""

    def __init__(
        self,
        stream: Stream,
        new_graph: Callable[[str], UserGraph],
        *,
        upcaster: Callable[[], Upcast | None] = lambda: None,
        max_users: int | None = None,
        max_bytes: int | None = None,
        lock: threading.RLock | None = None,
    ) -> None:
        self._stream = stream
        self._new_graph = new_graph
        self._upcaster = upcaster
        self.max_users = max_users
        self._lock = lock or threading.RLock()  # the engine's: see the module
        self._resident: OrderedDict[str, None] = OrderedDict()
        self._joins = _Joins(stream)
        self._graphs = GraphCache(
            self.read, self._mark, new_graph, max_users=None, dropped=self.forget,
            max_bytes=max_bytes, tail=self.tail, load=self._load,
        )  # fmt: skip
        self._folds = _Folds(stream, self.read)
        self._rows = _PlainRows(stream, self._loaded)
        self._live = _LiveFacts()
        self.key_reads = GraphReads()
        self._revisions: dict[str, Revisions] = {}
        self._pins = _Pins()

    def read(self, user_id: str, up_to_seq: int | None = None) -> list[Event]:
        """The events reads of the user fold: the memory switch and merged ids applied
        (``memkg.identity.view``); writes append to the user's own stream."""
        if up_to_seq is not None:
            return view(user_id, self._stream.read_stream, up_to_seq)[0]
        with self._lock:
            # the other ids' versions before the read: a write meanwhile is read again later
            before = self._joins.versions(user_id)
            events, ids = view(user_id, self._stream.read_stream, None)
            self._joins.read(user_id, ids - {user_id}, before)
        return events

    def _load(self, user_id: str) -> UserGraph:
        """The user's graph folded anew: from rows (``_PlainRows``), else from ``read``."""
        with self._lock:
            found = self._rows.fold(user_id, self._new_graph)
            if found is not None:
                self._joins.drop(user_id)
                return found
        graph = self._new_graph(user_id)
        events = self.read(user_id)
        for event in events:
            graph.apply(event)
        self._loaded(graph, events)
        return graph

    def _loaded(self, graph: UserGraph, events: Sequence[Event]) -> None:
        """``graph`` was just loaded from a read holding ``events``: the whole view, or (from
        rows) its review and note events, folded now from the same read, so that no later
        read of the user reads the history again for them."""
        with self._lock:
            self._folds.loaded(graph, events)

    def tail(self, cached: FactFold, version: int) -> list[Event] | None:
        """The events of the user's stream after ``cached`` (a projection of it), when they
        can be folded onto it: the view is the plain stream and they follow. ``None``: read
        the whole view again."""
        if not cached.plain or version <= cached.version:
            return None
        tail = self._stream.read_stream(cached.user_id, after_version=cached.version)
        if not tail or tail[0].version != cached.version + 1 or holds_any(tail, _OWN_ONLY):
            return None
        return list(tail)

    def pinned(self, user_id: str) -> AbstractContextManager[PinnedMark]:
        """Inside the block, this thread's reads of the user check the store once (a write's
        reads, against one state of the stream; see the module); it hands back that mark,
        which ``pin`` reads too (None before the block's first read)."""
        return self._pins.pinned(user_id)

    def pin(self, user_id: str) -> tuple[int, int] | None:
        return self._pins.mark(user_id)

    def _mark(self, user_id: str) -> tuple[int, int]:
        """The stream mark (``pinned``), the views dropped if an id they join moved."""
        found = self._pins.mark(user_id)
        if found is not None:
            return found
        with self._lock:
            if self._joins.moved(user_id):
                self.forget(user_id)
        found = self._stream.stream_mark(user_id)
        self._pins.checked(user_id, found)
        return found

    # -- reads --------------------------------------------------------------------------------

    def memory(self, user_id: str, *, as_of: int | None = None) -> UserMemory:
        """The user's memory: its graph's fold (or as of ``as_of``, not kept)."""
        if as_of is not None:
            return UserMemory.from_events(user_id, self.read(user_id, log_position(as_of)))
        return cast(UserMemory, self.graph(user_id).memory)

    def graph(self, user_id: str) -> UserGraph:
        """The user's current contextual graph (callers must not change it); its memory reads
        facts stored under an old key version as the current one, however it is reached."""
        with self._lock:
            graph = self._graphs.get(user_id)
            cast(UserMemory, graph.memory).upcast = self._upcaster()
            self._touch(user_id)
            return graph

    def graph_of(self, memory: UserMemory) -> UserGraph:
        """The graph ``memory`` was read from (``memory``, inside the user's pinned block, as
        a write reads it): the resident graph that folds it, with no second lookup; the
        user's current graph (``graph``) when that one is no longer resident."""
        resident = self._graphs.resident(memory.user_id)
        if resident is not None and resident[0].memory is memory:
            return resident[0]
        return self.graph(memory.user_id)

    def graph_as_of(
        self, user_id: str, *, seq: int | None = None, at: datetime | None = None
    ) -> UserGraph:
        """The user's graph as of a log position, or as memory stood at a time; not kept."""
        return self._graphs.as_of(user_id, **_as_of(seq, at))

    def view(
        self, user_id: str, now: datetime, params: WeightParams, domain: str | None = None
    ) -> tuple[UserGraph, View]:
        """The current graph and its weighted view at ``now`` (kept for one time per user)."""
        with self._lock:
            found = self._graphs.view(user_id, now, params, domain)
            self._touch(user_id)
            return found

    def reviews(self, user_id: str, graph: UserGraph | None = None) -> list[Review]:
        """The user's reviews as ``graph`` (default: the current one) holds the stream."""
        return list(self._held(self._folds.reviews, graph or self.graph(user_id))[0].values())

    def key_reviews(self, graph: UserGraph, domain: str, key: str) -> list[Review]:
        """The reviews of one key, in the order ``reviews`` lists them."""
        return list(self._held(self._folds.reviews, graph)[1].get((domain, key), {}).values())

    def notes(self, user_id: str, graph: UserGraph | None = None) -> NoteBook:
        """The user's notes as ``graph`` holds the stream (default: the current graph; every
        status; callers must not change the book), kept as the reviews are."""
        return self._held(self._folds.notes, graph or self.graph(user_id))

    def _held(self, kept: _Kept[_Folded], graph: UserGraph) -> _Folded:
        with self._lock:
            found = kept.of(graph)
            self._touch(graph.user_id)
            return found

    def live_facts(self, graph: UserGraph, domain: str, keys: frozenset[str] | None = None,
                   session: str | None = None) -> list[Fact]:  # fmt: skip
        """The domain's facts but history (``_LiveFacts.of``), kept until the stream moves."""
        with self._lock:
            facts, read = self._live.of(graph, domain, keys, session)
            if read:
                self._touch(graph.user_id)
            return facts

    def revisions(self, digest: str, build: Callable[[], Revisions]) -> Revisions:
        """The revision record of a rule bundle (schemas and ontology are fixed per engine)."""
        with self._lock:
            if (found := self._revisions.get(digest)) is None:
                found = self._revisions[digest] = build()
            return found

    @property
    def graph_bytes(self) -> int:
        """The resident graphs' estimated memory (``EngineConfig.memory_bound`` bounds it)."""
        return self._graphs.estimated_bytes

    def resident_graphs(self) -> int:
        """How many users' graphs are resident."""
        return len(self._graphs)

    def users(self) -> list[str]:
        """The resident users, least recently read first."""
        with self._lock:
            return list(self._resident)

    # -- what the owner tells ---------------------------------------------------------------

    def applied(
        self, user_id: str, events: Sequence[Event], asserted: Mapping[str, Fact] | None = None
    ) -> None:
        """Fold events just appended into every cache; ``asserted``: their facts, read."""
        if not events:
            return
        with self._lock:
            self.forget_joined(user_id)
            self._graphs.apply(user_id, events, asserted)
            self._folds.applied(user_id, events)
            self._rows.applied(self._graphs.resident(user_id), len(events))
        self._pins.moved(user_id, events[-1].version)

    def keep_snapshot(self, user_id: str) -> bool:
        """Keep the user's snapshot now, whatever their stream's length (a store filled by
        direct appends, an import): ``False`` when none is kept (a store without snapshots,
        a stream that is not plain)."""
        with self._lock:
            self.graph(user_id)
            return self._rows.keep(self._graphs.resident(user_id))

    def forget_joined(self, user_id: str) -> None:
        """Drop the cached views that join this user's events (merged ids of one person)."""
        with self._lock:
            for other in self._joins.joined_by(user_id):
                self.forget(other)

    def changed(self, user_id: str) -> None:
        """The user's stream changed outside ``applied`` (a switch, a link): every view that
        reads it is folded anew."""
        self.forget_joined(user_id)
        self.forget(user_id)

    def forget(self, user_id: str) -> None:
        """Drop every projection of the user (erased, purged, or evicted)."""
        self._pins.checked(user_id, None)  # read anew: checked again
        with self._lock:
            self._resident.pop(user_id, None)
            self._joins.drop(user_id)
            self._graphs.forget(user_id)
            self._folds.forget(user_id)
            self._live.forget(user_id)

    def reset(self) -> None:
        """Start over: every projection is folded from the log on its next read."""
        with self._lock:
            for user_id in list(self._resident):
                self.forget(user_id)

    def _touch(self, user_id: str) -> None:
        """The user was read. What was worked out of a graph not resident (a replay's, a dry
        run's, one the byte bound let go) is not kept; a count bound, if set, evicts here."""
        if user_id not in self._graphs:
            self._live.forget(user_id)
            self._folds.forget(user_id)
            return
        self._resident[user_id] = None
        self._resident.move_to_end(user_id)
        while self.max_users is not None and len(self._resident) > self.max_users:
            self.forget(self._resident.popitem(last=False)[0])


class GraphReads:
    """What reads of each graph (this engine's, a replay's or a dry run's: kept while it lives)
    worked out from it; each key's part while no event has touched the key since
    (``UserGraph.key_mark``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: weakref.WeakKeyDictionary[UserGraph, KeyReads] = weakref.WeakKeyDictionary()

    def of(self, graph: UserGraph) -> KeyReads:
        with self._lock:
            found = self._found.get(graph)
            if found is None:
                found = self._found[graph] = KeyReads()
            return found


class KeyReads:
    """What reads of one graph worked out from it, per key: filled and used by arbitration
    (``engine/arbitration.py``)."""

    __slots__ = ("keys", "now", "resolved")

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str], tuple[KeySpec, int, dict[str | None, KeyFacts]]] = {}
        """Per key, its declaration, the graph's ``changes`` its reads were made at (good
        while ``UserGraph.key_mark`` of the key stays below) and per session read (``None``:
        outside every session, and for a session that holds no fact of the key), its facts
        as reads there need them (``KeyFacts``)."""
        self.now: datetime | None = None
        self.resolved: dict[
            tuple[Any, ...], tuple[KeySpec, MemoryReader, Review | None, KeyFacts, Resolution]
        ] = {}
        """Key slots resolved at ``now``, by all a resolution depends on: the key's facts
        (the very ``KeyFacts``) and what the slot read (the key's declaration, the reader,
        the review that governs the slot)."""


_OWN_ONLY = SWITCH_EVENTS | IDENTITY_EVENTS
"""Events that make a view other than the plain stream (the memory switch, merged ids)."""
_OWN_ONLY_ROWS = frozenset(t.value for t in _OWN_ONLY)


class _PlainRows:
    """Folds a user's stored rows when they are the user's whole view (no switch or link
    row): no ``Event`` is built but for the review and note events, for the review index and
    the notes. When the store keeps snapshots (``engine.snapshots``), the fold starts from
    the user's, which keeps those events too."""

    def __init__(
        self, stream: object, loaded: Callable[[UserGraph, Sequence[Event]], None]
    ) -> None:
        self._stream = row_stream(stream)
        """``None``: the store does not hand its rows over (every load reads events)."""
        self._loaded = loaded
        """Told of each graph folded here, with the review and note events of its rows."""
        self._snapshots = Snapshots.of(stream, tuple(sorted(_KEPT_ROWS)))

    def keep(self, resident: tuple[UserGraph, int] | None) -> bool:
        """Keep the snapshot of the user's graph, if ``resident`` and the store keeps them."""
        if self._snapshots is None or resident is None:
            return False
        return self._snapshots.keep(*resident)

    def applied(self, resident: tuple[UserGraph, int] | None, events: int) -> None:
        """``events`` were just folded into the user's graph, if ``resident`` (with the purge
        count it was read at): a snapshot may be due (``Snapshots``)."""
        if self._snapshots is not None and resident is not None:
            self._snapshots.applied(*resident, events)

    def fold(self, user_id: str, new_graph: Callable[[str], UserGraph]) -> UserGraph | None:
        """The user's graph folded from their rows, onto their snapshot when one is kept and
        the rows after it are plain; ``None``: the rows are not the whole view."""
        if self._stream is None:
            return None
        if (snapshots := self._snapshots) is not None:
            graph = new_graph(user_id)
            restored = snapshots.restore(user_id, graph)
            if restored is not None:
                version, kept = restored
                tail = self._stream.read_rows(user_id, after_version=version)
                if self._folded(graph, tail, kept):
                    return graph
        graph = new_graph(user_id)
        return graph if self._folded(graph, self._stream.read_rows(user_id)) else None

    def _folded(
        self, graph: UserGraph, rows: list[StoredRow], kept: Sequence[StoredRow] = ()
    ) -> bool:
        """Fold ``rows`` into ``graph`` (after ``kept``, the review and note rows of the
        snapshot it was restored from); ``False``: they are not the plain view."""
        if self._stream is None or not _OWN_ONLY_ROWS.isdisjoint([row[4] for row in rows]):
            return False
        event = self._stream.row_event
        graph.fold_rows(rows, event)
        self._loaded(graph, [event(row) for row in (*kept, *rows) if row[4] in _KEPT_ROWS])
        if self._snapshots is not None:
            self._snapshots.loaded(graph, len(rows))
        return True


_Reviews = tuple[dict[str, Review], dict[tuple[str, str], dict[str, Review]]]
"""A user's reviews: by id, and by (domain, key)."""

_REVIEW_EVENTS = frozenset({EventType.KEY_FROZEN, EventType.REVIEW_RESOLVED})
_KEPT_ROWS = frozenset(t.value for t in _REVIEW_EVENTS | NoteBook.EVENTS)
"""The events folded beside the graphs (the review index, the notes), as stored rows."""
_Folded = TypeVar("_Folded")


class _Joins:
    """Which other ids each user's cached view joins (merged ids of one person), with each
    one's stream version as read: another process's write to one of them is seen on the next
    read (``moved``); and, per id, the users whose views join it."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self._of: dict[str, dict[str, int]] = {}
        self._by: dict[str, set[str]] = {}

    def versions(self, user_id: str) -> dict[str, int]:
        """The stream versions of the ids the user's view joined, now (before a read)."""
        return {o: self._stream.stream_mark(o)[0] for o in self._of.get(user_id, ())}

    def read(self, user_id: str, others: AbstractSet[str], before: dict[str, int]) -> None:
        """The user's view was read, joining ``others``, whose versions were ``before``."""
        if not others:
            self._of.pop(user_id, None)
            return
        for other in others:
            self._by.setdefault(other, set()).add(user_id)
        self._of[user_id] = {o: before.get(o, -1) for o in others}

    def moved(self, user_id: str) -> bool:
        joins = self._of.get(user_id) or {}
        return any(self._stream.stream_mark(o)[0] != version for o, version in joins.items())

    def joined_by(self, user_id: str) -> set[str]:
        """The users whose views join ``user_id``'s events (forgotten here)."""
        return self._by.pop(user_id, set())

    def drop(self, user_id: str) -> None:
        self._of.pop(user_id, None)


_LIVE_READS_KEPT = 256
"""Domains, and sets of keys read in a session, whose live facts are kept per user and state
of the user's memory, at most."""


class _LiveFacts:
    """Per user, the facts but superseded history of each domain (or of each set of keys read
    in a session) read at one graph mark (version, position, facts held): kept until the
    stream moves, when they are all dropped together."""

    def __init__(self) -> None:
        self._by_user: dict[str, tuple[tuple[int, int, int], dict[Any, list[Fact]]]] = {}

    def of(
        self, graph: UserGraph, domain: str, keys: frozenset[str] | None = None,
        session_id: str | None = None,
    ) -> tuple[list[Fact], bool]:  # fmt: skip
        """The domain's live facts in ``graph`` (or those of ``keys`` that a read in
        ``session_id``'s session can weigh), and whether they were read anew."""
        memory = graph.memory
        mark = (graph.version, graph.seq, memory.count)
        held = self._by_user.get(graph.user_id)
        if held is None or held[0] != mark:
            held = self._by_user[graph.user_id] = (mark, {})
        if keys is not None:
            session_id = memory.reading_session(domain, keys, session_id)
        read = domain if keys is None else (domain, keys, session_id)
        found = held[1].get(read)
        if found is not None:
            return found, False
        if keys is None:
            found = memory.unsuperseded(domain)
        else:
            found = memory.unsuperseded_in(domain, keys, session_id)
        if len(held[1]) >= _LIVE_READS_KEPT:
            held[1].clear()  # many sessions read one state of the user: start over
        held[1][read] = found
        return found, True

    def forget(self, user_id: str) -> None:
        self._by_user.pop(user_id, None)

    def __len__(self) -> int:
        """How many users' live facts are held."""
        return len(self._by_user)


class _Kept(Generic[_Folded]):
    """Per user, a fold of some kinds of the user's events (the reviews, the notes) as of a
    graph's stream version and log position: read up to that position, never past it (a
    write another process commits after the graph was read is in neither), caught up by the
    events after it, and kept current event by event. ``fold`` never changes what it is
    handed (a reader may hold it): it returns it, or a new fold when an event touches it."""

    def __init__(
        self, stream: Stream, read: Callable[..., list[Event]],
        fold: Callable[[_Folded | None, Sequence[Event]], _Folded],
    ) -> None:  # fmt: skip
        self._stream, self._read, self._fold = stream, read, fold
        self._kept: dict[str, tuple[tuple[int, int], _Folded]] = {}

    def loaded(self, graph: UserGraph, events: Sequence[Event]) -> None:
        """``graph`` was just folded from a read that held ``events`` (those of the kinds
        folded at least): the user's fold, from the same read."""
        self._kept[graph.user_id] = ((graph.version, graph.seq), self._fold(None, events))

    def of(self, graph: UserGraph) -> _Folded:
        user_id, mark = graph.user_id, (graph.version, graph.seq)
        cached = self._kept.get(user_id)
        if cached is not None and cached[0] != mark and cached[0][1] == mark[1]:
            # the same log position, the version the store gave the graph after its load (a
            # purge leaves it past the last event): the same events
            cached = (mark, cached[1])
        if cached is not None and cached[0] != mark and graph.memory.plain:
            tail = self._stream.read_stream(user_id, up_to_seq=graph.seq,
                                            after_version=cached[0][0])  # fmt: skip
            follows = bool(tail) and tail[0].version == cached[0][0] + 1
            cached = (mark, self._fold(cached[1], tail)) if follows else None
        if cached is None or cached[0] != mark:
            cached = (mark, self._fold(None, self._read(user_id, up_to_seq=graph.seq)))
        self._kept[user_id] = cached
        return cached[1]

    def applied(self, user_id: str, events: Sequence[Event]) -> None:
        cached = self._kept.get(user_id)
        if cached is not None:
            if cached[0][0] + 1 != events[0].version:
                del self._kept[user_id]  # they do not follow: read again when asked
            else:
                last = events[-1]
                self._kept[user_id] = ((last.version, last.seq), self._fold(cached[1], events))

    def forget(self, user_id: str) -> None:
        self._kept.pop(user_id, None)


class _Folds:
    """What is kept per user beside the graphs, folded from the user's events: the review
    index and the notes."""

    def __init__(self, stream: Stream, read: Callable[..., list[Event]]) -> None:
        self.reviews = _Kept(stream, read, _fold_reviews)
        self.notes = _Kept(stream, read, _fold_notes)

    def loaded(self, graph: UserGraph, events: Sequence[Event]) -> None:
        """``graph`` was just loaded from a read holding ``events``: every event of the kinds
        folded here (the whole view, or the review and note events of its rows)."""
        self.reviews.loaded(graph, events)
        self.notes.loaded(graph, events)

    def applied(self, user_id: str, events: Sequence[Event]) -> None:
        self.reviews.applied(user_id, events)
        self.notes.applied(user_id, events)

    def forget(self, user_id: str) -> None:
        self.reviews.forget(user_id)
        self.notes.forget(user_id)


_NO_REVIEWS: _Reviews = ({}, {})
_NO_NOTES = NoteBook()
"""What most users hold, shared: a fold is never changed once made (``_Kept``)."""


def _fold_reviews(held: _Reviews | None, events: Sequence[Event]) -> _Reviews:
    touched = [e for e in events if e.type in _REVIEW_EVENTS]
    if not touched:
        return _NO_REVIEWS if held is None else held
    reviews, by_key = ({}, {}) if held is None else (dict(held[0]), dict(held[1]))
    for event in touched:
        fold_review(reviews, event)
        changed = reviews.get(event.payload["review_id"])
        if changed is not None:
            slot = (changed.domain, changed.key)
            by_key[slot] = {**by_key.get(slot, {}), changed.review_id: changed}
    return reviews, by_key


def _fold_notes(book: NoteBook | None, events: Sequence[Event]) -> NoteBook:
    touched = [e for e in events if e.type in NoteBook.EVENTS]
    if not touched:
        return _NO_NOTES if book is None else book
    book = NoteBook() if book is None else book.copy()
    for event in touched:
        book.apply(event)
    return book


class _Pins:
    """Per thread, the users a write has ``pinned`` and the stream mark each is read at
    (``None``: not checked yet)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _marks(self) -> dict[str, tuple[int, int] | None]:
        marks: dict[str, tuple[int, int] | None] = self._local.__dict__.setdefault("marks", {})
        return marks

    @contextmanager
    def pinned(self, user_id: str) -> Iterator[PinnedMark]:
        marks = self._marks()
        if user_id in marks:
            yield lambda: marks.get(user_id)
            return
        marks[user_id] = None
        try:
            yield lambda: marks.get(user_id)
        finally:
            del marks[user_id]

    def mark(self, user_id: str) -> tuple[int, int] | None:
        return self._marks().get(user_id)

    def checked(self, user_id: str, mark: tuple[int, int] | None) -> None:
        """The mark just read for ``user_id`` (kept only while it is pinned)."""
        marks = self._marks()
        if user_id in marks:
            marks[user_id] = mark

    def moved(self, user_id: str, version: int) -> None:
        """This thread's write appended up to ``version``: its reads are at that version."""
        marks = self._marks()
        if (pin := marks.get(user_id)) is not None:
            marks[user_id] = (version, pin[1])
