"""One user's contextual graph, folded from the user's events.

``UserGraph`` keeps the user's facts (through a ``FactFold``, the fact layer's fold, so both
layers agree on what a fact's status is), the user's signals, and an rdflib ``Dataset``: one
named graph per memory domain (``graph:user/<id>/<domain>``) plus ``graph:knowledge``, the
part of the shared domain knowledge the user's entities touch (an entity's description and
everything reachable from it). The dataset is built on first use, then kept current event by
event; built either way it holds the same triples (a property test checks it).

The live claims of each domain, with the signals on their edges, are kept too (``claims_of``):
built on first use and rebuilt only after an event touches that domain, so weighing a user's
edges at a new time costs arithmetic, not a walk over every fact. The entity edge index (which
facts assert each ``user ─key→ entity`` edge: what the dataset's edge triples follow) and each
fact's targets are built when first needed too: a user folded for a decision builds neither
the dataset nor the index. ``fold_rows`` folds a user's stored rows without building their
events (``events.store.RowStream``), to the state ``apply`` leaves (a property test checks it).

Nothing here reads other users: a user's graph costs what the user's own events cost.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from rdflib import Dataset, Graph

from memkg.graph.claims import LIVE, EntityKeys, Target, targets
from memkg.graph.knowledge import Knowledge
from memkg.graph.rdf import (
    KNOWLEDGE_GRAPH,
    Triple,
    edge_triple,
    fact_triples,
    graph_iri,
    signal_triples,
    status_triple,
)
from memkg.graph.signals import SignalRecord, read_signal, row_signal
from memkg.model.event import Event, EventType, StoredRow
from memkg.model.fact import Fact, FactStatus, Scope
from memkg.model.weight import Signal

_CLAIM_BYTES = 250
"""What the graph adds to a folded fact: its targets, edge index and weighed claim."""
_SIGNAL_BYTES = 1_300
_RDF_FACT_BYTES, _RDF_SIGNAL_BYTES = 18_000, 9_000
"""An rdflib dataset's cost per fact and signal (built only for export, SPARQL and SHACL)."""

EdgeKey = tuple[str, str, str]
"""(domain, key, target value): one edge ``user ─key→ target`` of one domain."""


_FACT_EVENTS = frozenset({EventType.FACT_ASSERTED, EventType.FACT_CONFIRMED,
                          EventType.FACT_SUPERSEDED, EventType.FACT_RETRACTED,
                          EventType.FACT_EXPIRED})  # fmt: skip
_FACT_ROWS = frozenset(t.value for t in _FACT_EVENTS)
_SIGNAL_ROW = EventType.SIGNAL_RECORDED.value


@dataclass(frozen=True, slots=True)
class Claim:
    """One live claim ``user ─key→ target`` and the signals that count for it."""

    fact: Fact
    target: Target
    signals: tuple[Signal, ...]
    """Signals on the edge recorded after the fact, by time then event id."""
    source: str
    status: str
    active: bool


_KEY_CLAIMS_KEPT = 256
"""Sessions whose claims of one key ``claims_in`` keeps for one state of the key, at most."""


class FactFold(Protocol):
    """The fact layer's fold of one user's events (``events.projection.UserMemory``)."""

    user_id: str
    facts: dict[str, Fact]
    version: int
    seq: int
    memory_off: dict[str, Any] | None
    """Set while the user has turned memory off (the view then holds no facts)."""
    plain: bool
    """Whether the fold is of the user's own stream alone (no switch or link events)."""
    on_built: Callable[[], None] | None
    """Called once facts the fold held unread were built (``count`` then equals ``built``)."""

    @property
    def merged_ids(self) -> tuple[str, ...]: ...

    def apply(self, event: Event, asserted: Fact | None = None) -> None: ...

    def fold_rows(
        self, rows: Iterable[StoredRow], row_event: Callable[[StoredRow], Event]
    ) -> None: ...

    def settle(self, version: int) -> None: ...

    def of_key(self, domain: str, key: str) -> list[Fact]: ...

    def live(self, domain: str | None = None) -> list[Fact]: ...

    def fact(self, fact_id: str) -> Fact | None: ...

    def bearing(self, domain: str, key: str) -> list[Fact]: ...

    def bearing_in(self, domain: str, key: str, session_id: str | None) -> list[Fact]: ...

    def reading_session(
        self, domain: str, keys: Iterable[str], session_id: str | None
    ) -> str | None: ...

    def unsuperseded_in(
        self, domain: str, keys: Iterable[str], session_id: str | None
    ) -> list[Fact]: ...

    def live_ids(self, domain: str, key: str) -> Container[str]: ...

    def live_in(
        self, domain: str, key: str, scope: Scope, session_id: str | None
    ) -> list[Fact]: ...

    def skips(self, domain: str, key: str) -> bool: ...

    def unsuperseded(self, domain: str | None = None) -> list[Fact]: ...

    @property
    def count(self) -> int: ...

    @property
    def built(self) -> int: ...

    def estimated_bytes(self) -> int: ...


class UserGraph:
    def __init__(self, memory: FactFold, knowledge: Knowledge, entity_keys: EntityKeys) -> None:
        self.memory = memory
        self.user_id = memory.user_id
        self.knowledge = knowledge
        self.entity_keys = entity_keys
        self.signals: list[SignalRecord] = []
        self._signals_by_edge: dict[EdgeKey, list[SignalRecord]] = {}
        self._targets: dict[str, tuple[Target, ...]] = {}
        self._live: dict[EdgeKey, set[str]] = {}
        """The entity edge index: which live facts assert each entity edge (built with the
        dataset, which alone reads it)."""
        self._dataset: Dataset | None = None
        self._touched: set[str] = set()
        # ``claims_of`` memo: an entry is good while no event touched its domain since it was
        # built. Counters move after the event is folded in, so a read racing a write can
        # only store an entry already out of date, never a wrong one marked current.
        self._changes = 0
        self._floor = 0
        self._changed_at: dict[str | None, int] = {}
        self._key_changed_at: dict[tuple[str, str], int] = {}
        self._claims: dict[str | None, tuple[int, tuple[Claim, ...]]] = {}
        self._key_claims: dict[
            tuple[str, str], tuple[int, dict[str | None, tuple[Claim, ...]]]
        ] = {}
        """``claims_in``'s memo, per key: the change it was started at (good while ``key_mark``
        of the key stays at or below it) and the claims of each scope read."""

    @classmethod
    def from_events(
        cls,
        memory: FactFold,
        knowledge: Knowledge,
        entity_keys: EntityKeys,
        events: Iterable[Event],
    ) -> UserGraph:
        graph = cls(memory, knowledge, entity_keys)
        for event in events:
            graph.apply(event)
        return graph

    @property
    def version(self) -> int:
        return self.memory.version

    @property
    def seq(self) -> int:
        return self.memory.seq

    @property
    def changes(self) -> int:
        """Events folded in so far: it moves after each one (a mark for what is derived from
        the graph)."""
        return self._changes

    def key_mark(self, domain: str, key: str) -> int:
        """The change (``changes``) at which an event last touched the key's facts or the
        signals on their edges, or a fact it could not name (every key's then): what is
        worked out from the key alone at ``changes`` holds while this stays below it."""
        return max(self._floor, self._key_changed_at.get((domain, key), 0))

    def apply(self, event: Event, asserted: Fact | None = None) -> None:
        """Fold one event in (events of other users are refused by the fold); ``asserted``:
        the fact of a ``fact.asserted`` event, already read (``UserMemory.apply``)."""
        try:
            self._apply(event, asserted)
        finally:
            self._note_change(event)

    def fold_rows(self, rows: Iterable[StoredRow], row_event: Callable[[StoredRow], Event]) -> None:
        """Fold stored rows in: the state ``apply`` leaves after their events, building no
        ``Event`` (``row_event`` builds one only where the fold needs it whole)."""
        rows = list(rows)
        if self._dataset is not None:  # kept current fact by fact: fold the events
            for row in rows:
                self.apply(row_event(row))
            return
        self.memory.fold_rows(rows, row_event)
        fact_of, changed_at, changes = self.memory.fact, self._changed_at, self._changes
        key_changed_at = self._key_changed_at
        for row in rows:  # what ``_apply`` and ``_note_change`` do, row by row
            changes += 1
            type_ = row[4]
            if type_ == _SIGNAL_ROW:
                self._signal(signal := row_signal(row))
                changed_at[signal.domain] = key_changed_at[(signal.domain, signal.key)] = changes
            elif type_ in _FACT_ROWS:
                fact_id = row[6]
                if fact_id is None:
                    self._floor = changes
                elif (fact := fact_of(fact_id)) is not None:
                    changed_at[fact.domain] = key_changed_at[(fact.domain, fact.key)] = changes
        if changes != self._changes:
            self._changes = changed_at[None] = changes

    def _note_change(self, event: Event) -> None:
        """Mark the ``claims_of`` entries and the keys (``key_mark``) the event made stale
        (after it is folded in)."""
        self._changes += 1
        changes = self._changed_at[None] = self._changes
        if event.type is EventType.SIGNAL_RECORDED:
            domain = event.domain or ""
            self._changed_at[domain] = changes
            self._key_changed_at[(domain, str(event.payload.get("key")))] = changes
        elif event.type in _FACT_EVENTS:
            fact = self.memory.fact(event.fact_id) if event.fact_id else None
            if event.fact_id is None:
                self._floor = changes  # cannot tell which fact: every entry is stale
            elif fact is not None:
                self._changed_at[fact.domain] = changes
                self._key_changed_at[(fact.domain, fact.key)] = changes

    def _apply(self, event: Event, asserted: Fact | None) -> None:
        self.memory.apply(event, asserted)
        if event.type is EventType.SIGNAL_RECORDED:
            self._signal(read_signal(event))
            return
        fact = self.memory.fact(event.fact_id) if event.fact_id else None
        if fact is None:
            return
        if event.type is EventType.FACT_ASSERTED:
            self._asserted(fact)
        else:
            self._status_changed(fact)

    def _signal(self, signal: SignalRecord) -> None:
        self.signals.append(signal)
        edge = (signal.domain, signal.key, signal.target)
        self._signals_by_edge.setdefault(edge, []).append(signal)
        if self._dataset is not None:
            self._add(graph_iri(self.user_id, signal.domain),
                      signal_triples(self.user_id, signal))  # fmt: skip

    # -- reads ----------------------------------------------------------------------------

    def targets(self, fact: Fact) -> tuple[Target, ...]:
        found = self._targets.get(fact.id)
        if found is None:
            found = self._targets[fact.id] = targets(
                fact.domain, fact.key, fact.value, self.entity_keys
            )
        return found

    def claims(
        self, domain: str | None = None, at: datetime | None = None
    ) -> Iterator[tuple[Fact, Target]]:
        """Live claims (fact, target), oldest first; states past ``valid_until`` are not."""
        for fact in self.memory.live(domain):
            if at is not None and fact.valid_until is not None and fact.valid_until <= at:
                continue
            for target in self.targets(fact):
                yield fact, target

    def claims_of(self, domain: str | None = None) -> tuple[Claim, ...]:
        """Live claims (of ``domain``, or all), oldest first, whatever their ``valid_until``."""
        memo = self._claims.get(domain)
        if memo is not None and memo[0] >= max(self._floor, self._changed_at.get(domain, 0)):
            return memo[1]
        built_at = self._changes
        claims = tuple(c for fact in self.memory.live(domain) for c in self._fact_claims(fact))
        self._claims[domain] = (built_at, claims)
        return claims

    def claims_in(self, domain: str, keys: Iterable[str], session_id: str | None) -> list[Claim]:
        """``claims_of(domain)`` but those of ``keys`` alone, and of them those a read in
        ``session_id``'s session (or outside every session) can weigh: the long-term claims
        and that session's, in the same order. Each key's are kept while no event touches it
        (``key_mark``): a decision's view costs the claims it can use, not every live claim
        of the domain, nor every session's."""
        found = list[Claim]()
        for key in keys:
            of_key = self._key_claims.get((domain, key))
            if of_key is None or of_key[0] < self.key_mark(domain, key):
                of_key = self._key_claims[(domain, key)] = (self._changes, {})  # all go stale
            session = self.memory.reading_session(domain, (key,), session_id)
            for scope, at in ((Scope.GLOBAL, None), (Scope.SESSION, session)):
                if scope is Scope.SESSION and at is None:
                    break  # the session holds no claim of the key: the long-term ones alone
                made = of_key[1].get(at)
                if made is None:
                    made = tuple(c for fact in self.memory.live_in(domain, key, scope, at)
                                 for c in self._fact_claims(fact))  # fmt: skip
                    if len(of_key[1]) >= _KEY_CLAIMS_KEPT:
                        of_key[1].clear()  # many sessions read one state of the key
                    of_key[1][at] = made
                found.extend(made)
        found.sort(key=lambda c: (c.fact.seq, c.fact.id))  # a fact's claims keep their order
        return found

    def _fact_claims(self, fact: Fact) -> Iterator[Claim]:
        """The claims of one live fact, one per target, with the signals on each edge."""
        for target in self.targets(fact):
            signals = sorted((s.as_signal() for s in self.signals_for(fact, target)),
                             key=lambda s: (s.at, s.event_id))  # fmt: skip
            active = fact.status is FactStatus.ACTIVE
            yield Claim(fact, target, tuple(signals), fact.source.value, fact.status.value,
                        active)  # fmt: skip

    def claim_signals(self, fact: Fact) -> list[Signal]:
        """Every signal on any edge of ``fact`` (once each, by event id): what arbitration
        weighs the claim with."""
        found = {s.event_id: s for t in self.targets(fact) for s in self.signals_for(fact, t)}
        return [s.as_signal() for _, s in sorted(found.items())]

    def signals_for(self, fact: Fact, target: Target) -> list[SignalRecord]:
        """Signals on the fact's edge recorded after the fact (see ``graph.signals``)."""
        found = self._signals_by_edge.get((fact.domain, fact.key, target.value), [])
        return [s for s in found if s.seq > fact.seq]

    def estimated_bytes(self) -> int:
        """About how much memory the graph holds, its facts' fold included (measured with
        ``tracemalloc``; a test keeps the estimate within a factor of the count)."""
        facts = self.memory.built  # a history held unread has no targets nor claims
        signals = len(self.signals)
        rdf = 0
        if self._dataset is not None:
            rdf = _RDF_FACT_BYTES * facts + _RDF_SIGNAL_BYTES * signals
        folded = self.memory.estimated_bytes()
        return folded + _CLAIM_BYTES * facts + _SIGNAL_BYTES * signals + rdf

    def domains(self) -> list[str]:
        return sorted({f.domain for f in self.memory.facts.values()}
                      | {s.domain for s in self.signals})  # fmt: skip

    @property
    def dataset(self) -> Dataset:
        """The user's named graphs plus the knowledge they touch (built on first use, with the
        entity edge index: from then on both are kept current event by event)."""
        if self._dataset is None:
            facts = sorted(self.memory.facts.values(), key=lambda f: (f.seq, f.id))
            self._live = {}
            for fact in facts:  # each fact's last event left it where its status says
                self._track(fact)
            self._dataset = Dataset()
            for fact in facts:
                self._fact_rdf(fact)
                self._edges_rdf(fact, {t for t in self.targets(fact) if t.entity})
            for signal in self.signals:
                self._add(graph_iri(self.user_id, signal.domain),
                          signal_triples(self.user_id, signal))  # fmt: skip
        return self._dataset

    def graph(self, domain: str | None = None) -> Graph:
        """The user's graph of one domain, or of all their domains; a copy."""
        found = Graph()
        for name in [domain] if domain is not None else self.domains():
            for triple in self.dataset.graph(graph_iri(self.user_id, name)):
                found.add(triple)
        return found

    # -- upkeep ---------------------------------------------------------------------------

    def _asserted(self, fact: Fact) -> None:
        if self._dataset is not None:
            changed = self._track(fact)
            self._fact_rdf(fact)
            self._edges_rdf(fact, changed)

    def _status_changed(self, fact: Fact) -> None:
        if self._dataset is None:
            return  # the edge index is built with the dataset, from the facts as they are then
        changed = self._track(fact)
        named = self._dataset.graph(graph_iri(self.user_id, fact.domain))
        named.remove((status_triple(fact)[0], status_triple(fact)[1], None))
        named.add(status_triple(fact))
        self._edges_rdf(fact, changed)

    def _track(self, fact: Fact) -> set[Target]:
        """Update which facts assert each entity edge; return the edges that appeared or went."""
        changed = set()
        for target in self.targets(fact):
            if not target.entity:
                continue
            holders = self._live.setdefault((fact.domain, fact.key, target.value), set())
            had = bool(holders)
            if fact.status in LIVE:
                holders.add(fact.id)
            else:
                holders.discard(fact.id)
            if had != bool(holders):
                changed.add(target)
        return changed

    def _fact_rdf(self, fact: Fact) -> None:
        self._add(graph_iri(self.user_id, fact.domain),
                  [*fact_triples(fact, self.targets(fact)), status_triple(fact)])  # fmt: skip
        for target in self.targets(fact):
            if target.entity:
                self._touch(target.value)

    def _edges_rdf(self, fact: Fact, changed: set[Target]) -> None:
        assert self._dataset is not None
        named = self._dataset.graph(graph_iri(self.user_id, fact.domain))
        for target in changed:
            triple = edge_triple(self.user_id, fact.key, target)
            if self._live.get((fact.domain, fact.key, target.value)):
                named.add(triple)
            else:
                named.remove(triple)

    def _touch(self, ref: str) -> None:
        if ref in self._touched:
            return
        refs = [ref, *(edge.target for edge in self.knowledge.reachable([ref]))]
        for found in refs:
            if found not in self._touched:
                self._touched.add(found)
                self._add(KNOWLEDGE_GRAPH, self.knowledge.describe(found))

    def _add(self, name: object, triples: Iterable[Triple]) -> None:
        assert self._dataset is not None
        named = self._dataset.graph(name)  # type: ignore[arg-type]
        for triple in triples:
            named.add(triple)
