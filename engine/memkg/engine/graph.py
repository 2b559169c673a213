"""The graph layer: each user's contextual graph, its weights, signals and queries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from typing import Any

from memkg.engine.facts import FactLayer
from memkg.events.projection import UserMemory
from memkg.events.retry import unconditional
from memkg.graph import export, queries
from memkg.graph.cache import GraphCache
from memkg.graph.claims import EntityKeys
from memkg.graph.knowledge import Knowledge
from memkg.graph.projection import UserGraph
from memkg.graph.queries import Edge, GraphPath, RecentEntity
from memkg.graph.signals import signal_event
from memkg.graph.view import weighted_view
from memkg.model.event import Event


class GraphLayer(FactLayer):
    """Contextual graph reads and signals (logic in ``memkg.graph``); see ``memkg.Engine``."""

    @cached_property
    def _graphs(self) -> GraphCache:
        return GraphCache(self._read_stream, self.store.stream_mark, self._new_graph,
                          purged=self._forget, max_bytes=self.config.memory_bound)  # fmt: skip

    def _apply(self, user_id: str, events: Sequence[Event]) -> None:
        self._graphs.apply(user_id, events)
        super()._apply(user_id, events)

    def _forget(self, user_id: str) -> None:
        self._graphs.forget(user_id)
        super()._forget(user_id)

    @cached_property
    def knowledge(self) -> Knowledge:
        return Knowledge(self.ontology.knowledge)

    @cached_property
    def entity_keys(self) -> EntityKeys:
        """(domain, key) → entity class, for every key whose schema declares one."""
        specs = (self.registry.spec(d, k) for d in self.registry.domains()
                 for k in self.registry.keys(d))  # fmt: skip
        return {(s.domain, s.key): s.entity for s in specs if s is not None and s.entity}

    def _new_graph(self, user_id: str) -> UserGraph:
        return UserGraph(UserMemory(user_id), self.knowledge, self.entity_keys)

    @unconditional
    def signal(
        self, user_id: str, domain: str, key: str, value: Any, kind: str,
        *, session_id: str | None = None,
    ) -> Event:  # fmt: skip
        """Record that the user mentioned, corrected, ignored or rejected ``key → value``."""
        self._check_args(
            user_id=user_id, domain=domain, key=key, value=value, session_id=session_id
        )
        with self._lock:
            memory = self._writable(user_id)
            event = signal_event(
                user_id=user_id, domain=domain, key=key, value=value, kind=kind,
                session_id=session_id, live_facts=memory.current(domain, self.clock.now()),
                entity_keys=self.entity_keys, event_id=self.clock.new_id("evt"),
                now=self.clock.now(),
            )  # fmt: skip
            events = [event, *self._freezes(user_id, [event])]
            appended = self.store.append(user_id, events, expected_version=memory.version)
            self._apply(user_id, appended.events)
            return appended.events[0]

    def user_graph(self, user_id: str, *, as_of: int | None = None) -> UserGraph:
        """The user's contextual graph: facts, signals and RDF dataset (treat as read-only)."""
        self._check_args(user_id=user_id)
        return (
            self._graphs.get(user_id) if as_of is None else self._graphs.as_of(user_id, seq=as_of)
        )

    def graph(
        self, user_id: str, domain: str | None = None, *, as_of: int | None = None,
        fmt: str = "json",
    ) -> dict[str, Any] | str:  # fmt: skip
        """The user's graph (of one domain, or all) with weights: JSON data or Turtle text."""
        self._check_args(user_id=user_id, domain=domain)
        if as_of is None:
            graph, view = self._graphs.view(user_id, self.clock.now(), self.weights, domain)
        else:
            graph = self._graphs.as_of(user_id, seq=as_of)
            view = weighted_view(graph, self.clock.now(), self.weights, domain)
        return export.to_turtle(graph, view) if fmt == "turtle" else export.to_json(graph, view)

    def edges(
        self, user_id: str, domain: str, relation: str | None = None,
        min_weight: float | None = None, *, decidable_only: bool = False,
    ) -> list[Edge]:  # fmt: skip
        """The user's claims in ``domain``, heaviest first, each with its weight breakdown."""
        self._check_args(user_id=user_id, domain=domain, relation=relation)
        _, view = self._graphs.view(user_id, self.clock.now(), self.weights, domain)
        return queries.edges(view, relation, min_weight, decidable_only=decidable_only)

    def paths(
        self, user_id: str, concept: str, *, domain: str | None = None, max_depth: int = 3,
        decidable_only: bool = False,
    ) -> list[GraphPath]:  # fmt: skip
        """Paths from the user to ``concept`` (``protocol:immediate_hospital_visit``)."""
        self._check_args(user_id=user_id, concept=concept, domain=domain)
        _, view = self._graphs.view(user_id, self.clock.now(), self.weights, domain)
        return queries.paths(view, concept, max_depth, decidable_only=decidable_only)

    def recent_entities(
        self, user_id: str, entity_type: str, session_id: str, *, domain: str | None = None,
        limit: int = 10,
    ) -> list[RecentEntity]:  # fmt: skip
        """Entities of a type seen in the session, most recent first."""
        self._check_args(
            user_id=user_id, entity_type=entity_type, session_id=session_id, domain=domain
        )
        graph = self._graphs.get(user_id)
        return queries.recent_entities(graph, entity_type, session_id, domain=domain, limit=limit)

    def holding(self, user_id: str, at: datetime, domain: str | None = None) -> list[Edge]:
        """The claims that held at ``at``, as memory stood then, weighted as of then."""
        self._check_args(user_id=user_id, domain=domain)
        graph = self._graphs.as_of(user_id, at=at)
        return queries.edges(weighted_view(graph, at, self.weights, domain))
