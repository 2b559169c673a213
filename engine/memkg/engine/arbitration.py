"""The arbitration layer: which memory holds when claims disagree, and the review queue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any
from zoneinfo import ZoneInfo

from rdflib import RDFS

from memkg.arbitration import (
    MemoryReader,
    QuestionBook,
    Resolution,
    Review,
    ReviewStatus,
    RoleDefaults,
    hour_patterns,
    is_hours_key,
    labels_from,
)
from memkg.arbitration.claims import SignalLookup, slot
from memkg.arbitration.review import fold_review, frozen_payload, reviews_from
from memkg.arbitration.support import canon
from memkg.engine.facts import IngestResult
from memkg.engine.graph import GraphLayer
from memkg.errors import InvalidOperation, NotFound, ValidationFailed
from memkg.events.projection import preview
from memkg.events.retry import unconditional
from memkg.graph.projection import UserGraph
from memkg.lifecycle.erasure import ErasureReceipt
from memkg.model.event import Event, EventType, NewEvent
from memkg.model.fact import Fact, Source
from memkg.model.keyspec import KeySpec
from memkg.model.report import Problem, ValidationReport
from memkg.model.weight import Signal, SignalKind
from memkg.validate.guards import hash_pii


class ArbitrationLayer(GraphLayer):
    """Resolved values and reviews (logic in ``memkg.arbitration``); see ``memkg.Engine``."""

    @cached_property
    def reader(self) -> MemoryReader:
        """The arbitration policy, questions and role defaults under the roots' ``rules/``."""
        rules = self.layers.rule_dirs()
        labels = self.ontology.knowledge.subject_objects(RDFS.label)
        return MemoryReader(
            policy=self.policy,
            questions=QuestionBook.load(rules),
            defaults=RoleDefaults.load(rules, self.registry.spec),
            weights=self.weights,
            labels=labels_from((str(s), str(o), getattr(o, "language", None)) for s, o in labels),
        )

    def resolve(
        self, user_id: str, domain: str, key: str, *, session_id: str | None = None,
        turn: str | None = None, context: Mapping[str, str] | None = None,
        language: str | None = None,
    ) -> Resolution:  # fmt: skip
        """Which value of ``key`` holds now, with the arbitration record.

        ``session_id`` and ``turn`` (the turn's ``source_ref``) bring session notes and this
        turn's instruction in. A read never writes: keys are frozen (and queued for review) by
        the writes that create their conflict.
        """
        self._check_args(
            user_id=user_id,
            domain=domain,
            key=key,
            session_id=session_id,
            turn=turn,
            context=context,
            language=language,
        )
        spec = self._key_spec(domain, key)
        with self._lock:
            graph = self._graphs.get(user_id)
            return self._resolution(
                graph, self._reviews(user_id, graph.seq), spec, self.clock.now(),
                session_id=session_id, turn=turn, context=context, language=language,
            )  # fmt: skip

    def _resolution(
        self, graph: UserGraph, reviews: Sequence[Review], spec: KeySpec, now: datetime, *,
        session_id: str | None, turn: str | None, context: Mapping[str, Any] | None,
        language: str | None = None,
    ) -> Resolution:  # fmt: skip
        """One key slot of one user, resolved: what ``resolve`` answers and what a decision
        uses for the key (one function, so the two cannot disagree)."""
        return self.reader.resolve_key(
            graph.memory.of_key(spec.domain, spec.key), self._edge_signals(graph), reviews, spec,
            now, user_id=graph.user_id, session_id=session_id, turn=turn, context=context,
            language=language,
        )  # fmt: skip

    def resolved_facts(
        self, user_id: str, domain: str, *, session_id: str | None = None,
        turn: str | None = None, language: str | None = None,
    ) -> list[Resolution]:  # fmt: skip
        """What reads and decisions use: every key slot's resolved value with its record."""
        self._check_args(
            user_id=user_id, domain=domain, session_id=session_id, turn=turn, language=language
        )
        specs = [s for k in self.registry.keys(domain) if (s := self.registry.spec(domain, k))]
        with self._lock:
            graph = self._graphs.get(user_id)
            found = self.reader.resolve_domain(
                list(graph.memory.facts.values()), self._edge_signals(graph),
                self._reviews(user_id, graph.seq), specs, self.clock.now(), user_id=user_id,
                session_id=session_id, turn=turn, language=language,
            )  # fmt: skip
            return found

    def review_queue(self, *, include_resolved: bool = False) -> list[Review]:
        """Frozen keys waiting for a reviewer, oldest first (reads the whole log)."""
        reviews = reviews_from(self.store.read_all()).values()
        found = [r for r in reviews if include_resolved or r.status is ReviewStatus.OPEN]
        return sorted(found, key=lambda r: (r.opened_at, r.review_id))

    @unconditional
    def resolve_review(
        self, review_id: str, value: Any, note: str, reviewer: str = "reviewer"
    ) -> Review:
        """Settle a frozen key with ``value``: an event naming the reviewer; the key unfreezes."""
        self._check_args(review_id=review_id, value=value, note=note, reviewer=reviewer)
        review = self._open_review(review_id)
        if not note.strip() or len(note) > 500 or not reviewer.strip() or len(reviewer) > 128:
            raise InvalidOperation("give a note of 1-500 characters and the reviewer's name",
                                   code="review.note")  # fmt: skip
        spec = self._key_spec(review.domain, review.key)
        problems = tuple(
            Problem(code=f"schema.{e.validator}", path="$.value", message=e.message, stage="schema")
            for e in spec.validator.iter_errors(value)
        )
        if problems:
            raise ValidationFailed(ValidationReport(problems=problems))
        if spec.hashed_paths:
            value = hash_pii(value, spec.hashed_paths, self._salt(review.user_id))
        payload = {"review_id": review_id, "key": review.key, "context": review.context,
                   "value": value, "note": note, "reviewer": reviewer}  # fmt: skip
        with self._lock:
            review = self._open_review(review_id)  # again, under the lock: resolved only once
            self._append_plain(
                review.user_id, review.domain, EventType.REVIEW_RESOLVED, payload,
                subject_id=review_id,
            )  # fmt: skip
        return review.model_copy(update={"status": ReviewStatus.RESOLVED, "value": value,
                                         "note": note, "reviewer": reviewer,
                                         "resolved_at": self.clock.now()})  # fmt: skip

    def _open_review(self, review_id: str) -> Review:
        review = next((r for r in self.review_queue(include_resolved=True)
                       if r.review_id == review_id), None)  # fmt: skip
        if review is None:
            raise NotFound(f"no review {review_id}", code="review.not_found")
        if review.status is not ReviewStatus.OPEN:
            raise InvalidOperation(f"review {review_id} is already resolved", code="review.closed")
        return review

    def erase_audit_id(self, audit_log_id: str) -> list[ErasureReceipt]:
        """Also remove the reviews of contests the purged facts took part in: a reviewer's
        value may repeat what the user said under that audit id."""
        self._check_args(audit_log_id=audit_log_id)
        with self._lock:
            for user_id, fact_ids in self.store.fact_ids_with_audit_id(audit_log_id).items():
                purged = set(fact_ids)
                seq = self.memory(user_id).seq
                reviews = [r.review_id for r in self._reviews(user_id, seq)
                           if purged & {c.get("fact_id") for c in r.claims}]  # fmt: skip
                if reviews:
                    self.store.purge_facts(user_id, reviews)
                    self._forget(user_id)
            return super().erase_audit_id(audit_log_id)

    def derive_patterns(self, user_id: str, domain: str, *, tz: str = "UTC") -> list[IngestResult]:
        """Write ``pattern`` facts the user's behaviour shows ("usually shops 20:00-22:00")."""
        self._check_args(user_id=user_id, domain=domain, tz=tz)
        zone = ZoneInfo(tz)
        facts = list(self.memory(user_id).facts.values())
        written = []
        for key in self.registry.keys(domain):
            spec = self.registry.spec(domain, key)
            if spec is None or not is_hours_key(spec):
                continue
            for obs in hour_patterns(facts, spec, user_id=user_id, tz=zone, now=self.clock.now()):
                held = [f for f in self.memory(user_id).live_claims(domain, key)
                        if f.source is Source.SYSTEM and f.context == obs.context]  # fmt: skip
                if not any(canon(f.value) == canon(obs.value) for f in held):
                    written.append(self.ingest(obs))
        return written

    def _edge_signals(self, graph: UserGraph) -> SignalLookup:
        """A claim's signals: those on its edge in the contextual graph."""

        return graph.claim_signals

    def _reviews(self, user_id: str, seq: int) -> list[Review]:
        """The user's reviews as of ``seq``: kept current by ``_apply``, read once per user."""
        return list(self._review_index(user_id, seq)[1].values())

    def _key_reviews(self, user_id: str, seq: int, domain: str, key: str) -> list[Review]:
        """The reviews of one key, in the order ``_reviews`` lists them."""
        return list(self._review_index(user_id, seq)[2].get((domain, key), {}).values())

    def _review_index(self, user_id: str, seq: int) -> _ReviewIndex:
        cached = self._review_cache.get(user_id)
        if cached is None or cached[0] != seq:
            found = reviews_from(self._read_stream(user_id))
            by_key: dict[tuple[str, str], dict[str, Review]] = {}
            for review in found.values():
                by_key.setdefault((review.domain, review.key), {})[review.review_id] = review
            cached = self._review_cache[user_id] = (seq, found, by_key)
        return cached

    @cached_property
    def _review_cache(self) -> dict[str, _ReviewIndex]:
        return {}

    def _apply(self, user_id: str, events: Sequence[Event]) -> None:
        super()._apply(user_id, events)
        cached = self._review_cache.get(user_id)
        if cached is None or not events:
            return
        _, reviews, by_key = cached
        touched = [e for e in events if e.type in _REVIEW_EVENTS]
        if touched:  # new dicts: a reader may hold the old ones
            reviews, by_key = dict(reviews), dict(by_key)
            for event in touched:
                fold_review(reviews, event)
                changed = reviews.get(event.payload["review_id"])
                if changed is not None:
                    slot = (changed.domain, changed.key)
                    by_key[slot] = {**by_key.get(slot, {}), changed.review_id: changed}
        self._review_cache[user_id] = (events[-1].seq, reviews, by_key)

    def _forget(self, user_id: str) -> None:
        self._review_cache.pop(user_id, None)
        super()._forget(user_id)

    def _freezes(self, user_id: str, pending: Sequence[NewEvent]) -> list[NewEvent]:
        """``key.frozen`` events for every key slot ``pending`` (a write about to be appended)
        leaves in a conflict above the freeze band with no open review: they go in the same
        append as the write, so the review queue never waits for a read."""
        graph, memory = self._graphs.get(user_id), self.memory(user_id)
        keys: set[tuple[str, str]] = set()
        added: dict[tuple[str, str, str], list[Signal]] = {}
        for event in pending:
            if event.type is EventType.FACT_ASSERTED:
                keys.add((event.domain or "", event.payload["fact"]["key"]))
            elif event.type is EventType.SIGNAL_RECORDED:
                edge = (event.domain or "", event.payload["key"], event.payload["target"])
                added.setdefault(edge, []).append(
                    Signal(SignalKind(event.payload["kind"]), event.recorded_at, event.event_id)
                )
                keys.add(edge[:2])
            elif (fact := memory.facts.get(event.fact_id or "")) is not None:
                keys.add((fact.domain, fact.key))
        if not keys:
            return []
        known = self._edge_signals(graph)

        def signals(fact: Fact) -> list[Signal]:
            extra = [
                s
                for t in graph.targets(fact)
                for s in added.get((fact.domain, fact.key, t.value), ())
            ]
            return [*known(fact), *extra]  # fmt: skip

        now, found = self.clock.now(), []
        for domain, key in sorted(keys):
            spec = self.registry.spec(domain, key)
            if spec is None:
                continue
            reviews = self._key_reviews(user_id, graph.seq, domain, key)
            live = [f for f in preview(memory.live_claims(domain, key), pending, memory.seq)
                    if (f.domain, f.key) == (domain, key)]  # fmt: skip
            for items in sorted({tuple(sorted(slot(f.context, spec.context).items()))
                                 for f in live}):  # fmt: skip
                held = self.reader.freezes(
                    live, signals, reviews, spec, now, user_id=user_id, context=dict(items)
                )
                if held is None:
                    continue
                review_id = self.clock.new_id("review")
                found.append(NewEvent(
                    event_id=self.clock.new_id("evt"), type=EventType.KEY_FROZEN,
                    user_id=user_id, domain=domain, payload=frozen_payload(review_id, held),
                    recorded_at=now, fact_id=review_id,
                ))  # fmt: skip
        return found


_ReviewIndex = tuple[int, dict[str, Review], dict[tuple[str, str], dict[str, Review]]]
"""A user's reviews as of a log position: by id, and by (domain, key)."""

_REVIEW_EVENTS = frozenset({EventType.KEY_FROZEN, EventType.REVIEW_RESOLVED})
