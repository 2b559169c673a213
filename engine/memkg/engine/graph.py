"""The graph stage, wired: each user's contextual graph, its weights, signals and queries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from memkg.arbitration import ReviewStatus
from memkg.clock import Clock
from memkg.config import EngineConfig
from memkg.engine.journal import Journal
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_args, check_count
from memkg.errors import InvalidOperation
from memkg.events.projection import UserMemory
from memkg.events.retry import Attempts, unconditional
from memkg.graph import export, queries
from memkg.graph.projection import UserGraph
from memkg.graph.queries import Edge, GraphPath, RecentEntity
from memkg.graph.signals import signal_event
from memkg.graph.view import weighted_view
from memkg.model.event import Event
from memkg.model.weight import WeightParams
from memkg.validate.limits import check_value, require_text

MAX_DEPTH = 6
"""The most hops ``paths`` walks (as over HTTP and the CLI): past that a dense knowledge
graph holds more paths than any answer can."""


@dataclass(eq=False, repr=False)
class GraphService:
    """Contextual graph reads and signals (logic in ``memkg.graph``); see ``memkg.Engine``."""

    setup: Setup
    projections: Projections
    journal: Journal
    clock: Clock
    conflicts: Attempts

    @property
    def config(self) -> EngineConfig:
        return self.setup.config

    @property
    def weights(self) -> WeightParams:
        return self.setup.weights

    @unconditional
    def signal(
        self, user_id: str, domain: str, key: str, value: Any, kind: str,
        *, session_id: str | None = None,
    ) -> Event:  # fmt: skip
        """Record that the user mentioned, corrected, ignored or rejected ``key → value``."""
        check_args(user_id=user_id, domain=require_text(domain, "domain"),
                   key=require_text(key, "key"), value=value, session_id=session_id)  # fmt: skip
        problems = check_value(value, self.config.limits)
        if problems:  # no fact holds such a value (nor could the event store it as JSON)
            first = problems[0]
            raise InvalidOperation(
                f"no claim of {key:.80} can hold this value ({first.code} at {first.path}: "
                f"{first.message:.200}): signal a value the user's memory holds",
                code="signal.value",
            )
        with self.journal.writing(user_id) as memory:
            event = signal_event(
                user_id=user_id, domain=domain, key=key, value=value, kind=kind,
                session_id=session_id, live_facts=memory.current(domain, self.clock.now()),
                entity_keys=self.setup.entity_keys, event_id=self.clock.new_id("evt"),
                now=self.clock.now(),
            )  # fmt: skip
            appended = self.journal.append(
                user_id, [event], expected_version=memory.version, freeze=True, memory=memory
            )
            return appended.events[0]

    def user_graph(self, user_id: str, *, as_of: int | None = None) -> UserGraph:
        """The user's contextual graph: facts, signals and RDF dataset (treat as read-only)."""
        check_args(user_id=user_id)
        if as_of is None:
            return self.projections.graph(user_id)
        return _past(self.projections, user_id, seq=as_of)

    def graph(
        self, user_id: str, domain: str | None = None, *, as_of: int | None = None,
        fmt: str = "json",
    ) -> dict[str, Any] | str:  # fmt: skip
        """The user's graph (of one domain, or all) with weights: JSON data or Turtle text."""
        check_args(user_id=user_id, domain=domain)
        if fmt not in ("json", "turtle"):
            raise InvalidOperation(f"fmt is json or turtle, not {fmt!r:.40}", code="argument.type")
        self._known(domain)
        if as_of is None:
            now = self.clock.now()
            graph, view = self.projections.view(user_id, now, self.weights, domain)
        else:
            graph = _past(self.projections, user_id, seq=as_of)
            view = weighted_view(graph, self.clock.now(), self.weights, domain)
        if fmt == "turtle":
            with self.journal.lock:  # it walks the resident graph's facts and RDF dataset
                return export.to_turtle(graph, view)
        return export.to_json(graph, view, self._frozen(user_id) if as_of is None else ())

    def edges(
        self, user_id: str, domain: str, relation: str | None = None,
        min_weight: float | None = None, *, decidable_only: bool = False,
    ) -> list[Edge]:  # fmt: skip
        """The user's claims in ``domain``, heaviest first, each with its weight breakdown."""
        check_args(user_id=user_id, domain=domain, relation=relation)
        self._known(domain)
        _flag(decidable_only, "decidable_only")
        _, view = self.projections.view(user_id, self.clock.now(), self.weights, domain)
        return queries.edges(view, relation, min_weight, decidable_only=decidable_only,
                             frozen=self._frozen(user_id))  # fmt: skip

    def paths(
        self, user_id: str, concept: str, *, domain: str | None = None, max_depth: int = 3,
        decidable_only: bool = False,
    ) -> list[GraphPath]:  # fmt: skip
        """Paths from the user to ``concept`` (``protocol:immediate_hospital_visit``)."""
        check_args(user_id=user_id, concept=concept, domain=domain)
        self._known(domain)
        if type(max_depth) is not int or not 1 <= max_depth <= MAX_DEPTH:
            raise InvalidOperation(
                f"max_depth is a whole number from 1 to {MAX_DEPTH} (the most hops from the "
                f"user to the concept), not {max_depth!r:.40}", code="argument.type",
            )  # fmt: skip
        _flag(decidable_only, "decidable_only")
        _, view = self.projections.view(user_id, self.clock.now(), self.weights, domain)
        return queries.paths(view, concept, max_depth, decidable_only=decidable_only,
                             frozen=self._frozen(user_id))  # fmt: skip

    def _frozen(self, user_id: str) -> set[tuple[str, str]]:
        """The keys an open review holds frozen for the user (any of their slots)."""
        return {(r.domain, r.key) for r in self.projections.reviews(user_id)
                if r.status is ReviewStatus.OPEN}  # fmt: skip

    def recent_entities(
        self, user_id: str, entity_type: str, session_id: str, *, domain: str | None = None,
        limit: int = 10,
    ) -> list[RecentEntity]:  # fmt: skip
        """Entities of a type seen in the session, most recent first."""
        check_args(user_id=user_id, entity_type=entity_type, session_id=session_id, domain=domain)
        check_count(limit, "limit", 0, "how many entities to list")
        self._known(domain)
        graph = self.projections.graph(user_id)
        with self.journal.lock:  # a resident graph's facts are kept as a write folds events
            return queries.recent_entities(graph, entity_type, session_id, domain=domain,
                                           limit=limit)  # fmt: skip

    def holding(self, user_id: str, at: datetime, domain: str | None = None) -> list[Edge]:
        """The claims that held at ``at``, as memory stood then, weighted as of then."""
        check_args(user_id=user_id, domain=domain)
        self._known(domain)
        graph = _past(self.projections, user_id, at=at)
        return queries.edges(weighted_view(graph, at, self.weights, domain))

    def holding_over(
        self, user_id: str, moments: Iterable[datetime], domain: str, key: str
    ) -> list[tuple[datetime, list[Edge]]]:
        """``holding`` at each moment (oldest first), of the claims of ``key`` alone, from one
        fold of the user's log read as it passes each moment: the cost is the log once plus
        the domain's live claims at each moment, not the log at each moment.

        A moment reads the log up to its first event recorded after the moment: where the
        log's times go back (two processes whose clocks differ, a clock set back), an event
        recorded earlier than one before it waits for that one, so a moment never shows an
        event recorded after it; a log in time order reads exactly as ``holding``."""
        check_args(user_id=user_id, domain=domain)
        self._known(domain)
        ordered = sorted(set(moments))
        current = _memory_off(self.projections, user_id)
        if current is not None:
            return [(at, self._key_edges(current, at, domain, key)) for at in ordered]
        events = self.projections.read(user_id)  # what ``graph_as_of`` folds
        graph = self.setup.new_graph(user_id)
        taken, found = 0, []
        for at in ordered:
            while taken < len(events) and events[taken].recorded_at <= at:
                graph.apply(events[taken])
                taken += 1
            found.append((at, self._key_edges(graph, at, domain, key)))
        return found

    def _key_edges(self, graph: UserGraph, at: datetime, domain: str, key: str) -> list[Edge]:
        """``holding``'s edges of one key: the view of that key's claims alone holds the same
        edges from the user (knowledge edges start at entities, never at the user)."""
        claims = [c for c in graph.claims_of(domain) if c.fact.key == key]
        return queries.edges(weighted_view(graph, at, self.weights, domain, claims), key)

    def _known(self, domain: str | None) -> None:
        self.setup.known(domain)


def _past(
    projections: Projections, user_id: str, *, seq: int | None = None, at: datetime | None = None
) -> UserGraph:
    """``graph_as_of`` for a caller's read of the past: while the user's memory is off, the
    current view, which holds nothing back it keeps (a read made now sees what the switch says
    now, whatever time it asks about; a replay reads ``graph_as_of``)."""
    current = _memory_off(projections, user_id)
    if current is not None:
        return current
    return projections.graph_as_of(user_id, seq=seq, at=at)


def _memory_off(projections: Projections, user_id: str) -> UserGraph | None:
    """The user's current graph while their memory is off (what ``_past`` reads then)."""
    current = projections.graph(user_id)
    return current if cast(UserMemory, current.memory).memory_off is not None else None


def _flag(value: object, name: str) -> None:
    if type(value) is not bool:
        raise InvalidOperation(f"{name} is true or false, not {value!r:.40}",
                               code="argument.type")  # fmt: skip
