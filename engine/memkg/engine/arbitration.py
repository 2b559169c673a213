"""The arbitration stage, wired: which memory holds when claims disagree, and which writes
freeze a key for review."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from memkg.arbitration import Resolution, Review
from memkg.arbitration.claims import SignalLookup, slot
from memkg.arbitration.reader import KeyFacts, cannot_freeze
from memkg.arbitration.review import frozen_payload, latest_review
from memkg.clock import Clock
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_args
from memkg.events.projection import UserMemory, asserted_facts, preview
from memkg.graph.projection import UserGraph
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import Fact, Scope
from memkg.model.keyspec import KeySpec
from memkg.model.weight import Signal, SignalKind


@dataclass(eq=False, repr=False)
class Arbiter:
    """Resolved values and the freezes a write entails (logic in ``memkg.arbitration``)."""

    setup: Setup
    projections: Projections
    clock: Clock
    lock: threading.RLock

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
        check_args(
            user_id=user_id,
            domain=domain,
            key=key,
            session_id=session_id,
            turn=turn,
            context=context,
            language=language,
        )
        spec = self.setup.key_spec(domain, key)
        with self.lock:
            graph = self.projections.graph(user_id)
            return self.resolution(
                graph, self.projections.reviews(user_id, graph), spec, self.clock.now(),
                session_id=session_id, turn=turn, context=context, language=language,
            )  # fmt: skip

    def resolution(
        self, graph: UserGraph, reviews: Sequence[Review], spec: KeySpec, now: datetime, *,
        session_id: str | None, turn: str | None, context: Mapping[str, Any] | None,
        language: str | None = None,
    ) -> Resolution:  # fmt: skip
        """One key slot of one user, resolved: what ``resolve`` answers and what a decision
        uses for the key (one function, so the two cannot disagree).

        What it works out is kept while no event touches the key (``Projections.key_reads``,
        ``UserGraph.key_mark``): the key's facts and their claims' signals as every read
        needs them, and the resolution itself for one time, by all it depends on: the
        key's facts, the time, the key's declaration, the context slot read, session,
        turn, language and the review that governs the slot; a second read of an unchanged
        slot at the same time resolves nothing, and a write to another key leaves this
        one's facts as they were read.
        """
        reader, reads = self.setup.reader, self.projections.key_reads.of(graph)
        signals = self.edge_signals(graph)
        key = self._key_facts(graph, spec, session_id)
        want = key.slot_read(context, spec, session_id, turn)
        review = latest_review(reviews, spec.domain, spec.key, want)
        asked = slot(context or {}, spec.context)
        if asked != want and (held_by := latest_review(reviews, spec.domain, spec.key, asked)):
            # a slot whose claims were retracted is read on its own while a review governs
            # it: the reviewer's value, or the freeze, outlives the claims, as in the general
            # slot
            want, review = asked, held_by
        if reads.now != now:
            reads.now, reads.resolved = now, {}
        slot_read = (now, spec.domain, spec.key, tuple(want.items()), session_id, turn, language)
        held = reads.resolved.get(slot_read)
        if (held is not None and held[0] is spec and held[1] is reader and held[2] == review
                and held[3] is key):  # fmt: skip
            return held[4]
        found = reader.resolve_read(
            key, key.lookup(signals), reviews, spec, now, user_id=graph.user_id,
            session_id=session_id, turn=turn, context=want, language=language,
            slot=(want, review),
        )  # fmt: skip
        reads.resolved[slot_read] = (spec, reader, review, key, found)
        return found

    def _key_facts(self, graph: UserGraph, spec: KeySpec, session_id: str | None) -> KeyFacts:
        """``spec``'s key as reads in ``session_id``'s session (or outside every session)
        need it, kept while no event touches the key (``UserGraph.key_mark``): its facts but
        those no read tells apart (spent ones, and those a restore left unread) and those of
        other sessions (which count only there), with their claims' signals. So a read costs
        the key's long-term facts and its session's, not those of every session the user had.
        """
        reads, memory = self.projections.key_reads.of(graph), graph.memory
        domain, name = spec.domain, spec.key
        session_id = memory.reading_session(domain, (name,), session_id)
        of_key = reads.keys.get((domain, name))
        if of_key is None or of_key[0] is not spec or of_key[1] < graph.key_mark(domain, name):
            # every session's read of the key goes stale together; the mark is read before
            # the facts: an event folded meanwhile leaves it stale
            of_key = reads.keys[(domain, name)] = (spec, graph.changes, {})
        found = of_key[2].get(session_id)
        if found is None:
            held = memory.bearing_in(domain, name, session_id)
            found = KeyFacts.of(
                held, spec, keep_signals=True, holding=memory.live_ids(domain, name)
            )
            if len(of_key[2]) >= _KEY_READS_KEPT:
                of_key[2].clear()  # many sessions read one state of the key: start over
            of_key[2][session_id] = found
        return found

    def resolved_facts(
        self, user_id: str, domain: str, *, session_id: str | None = None,
        turn: str | None = None, language: str | None = None,
    ) -> list[Resolution]:  # fmt: skip
        """What reads and decisions use: every key slot's resolved value with its record.

        Every slot that has claims or a role default, resolved as ``resolution`` resolves it
        for ``resolve`` and decisions (what it works out is kept while the user's memory
        stands), in the order of the domain's keys and of their slots: what the domain's keys
        hold, at a cost that does not grow with the user's history."""
        check_args(
            user_id=user_id, domain=domain, session_id=session_id, turn=turn, language=language
        )
        registry, defaults = self.setup.registry, self.setup.reader.defaults
        specs = [s for k in registry.keys(domain) if (s := registry.spec(domain, k))]
        found = []
        with self.lock:
            graph = self.projections.graph(user_id)
            reviews = self.projections.reviews(user_id, graph)
            now = self.clock.now()
            for spec in specs:
                key = self._key_facts(graph, spec, session_id)
                slots = {tuple(sorted(held)) for held in key.slots(session_id, turn)}
                if defaults.get(spec.domain, spec.key) is not None or graph.memory.skips(
                    spec.domain, spec.key
                ):  # a role default, or facts no read lists: the general slot (a review's)
                    slots.add(())
                for items in sorted(slots):
                    resolution = self.resolution(
                        graph, reviews, spec, now, session_id=session_id, turn=turn,
                        context=dict(items), language=language,
                    )  # fmt: skip
                    if resolution.claims or resolution.value is not None:
                        found.append(resolution)
        return found

    def edge_signals(self, graph: UserGraph) -> SignalLookup:
        """A claim's signals: those on its edge in the contextual graph."""

        return graph.claim_signals

    def freezes(
        self,
        memory: UserMemory,
        pending: Sequence[NewEvent],
        asserted: Mapping[str, Fact] | None = None,
    ) -> list[NewEvent]:
        """``key.frozen`` events for every key slot ``pending`` (a write about to be appended)
        leaves in a conflict above the freeze band with no open review: they go in the same
        append as the write, so the review queue never waits for a read.

        ``memory``: the user's memory the write reads (``Projections.memory`` in its pinned
        block), whose graph is not looked up again (``Projections.graph_of``).
        ``asserted``: the facts of the write's ``fact.asserted`` events by event id, as
        ``asserted_facts`` reads them (read here when not given). Slots the reader would
        answer without weighing a claim are not asked (``cannot_freeze``), and a key with no
        other slot is not previewed."""
        graph = self.projections.graph_of(memory)
        memory = cast(UserMemory, graph.memory)  # ``memory`` itself while its graph is resident
        user_id = memory.user_id
        keys: set[tuple[str, str]] = set()
        added: dict[tuple[str, str, str], list[Signal]] = {}
        touched: set[str] = set()  # the facts whose claims the write adds or changes
        for event in pending:
            if event.type is EventType.FACT_ASSERTED:
                keys.add((event.domain or "", event.payload["fact"]["key"]))
                touched.add(event.payload["fact"]["id"])
            elif event.type is EventType.SIGNAL_RECORDED:
                edge = (event.domain or "", event.payload["key"], event.payload["target"])
                added.setdefault(edge, []).append(
                    Signal(SignalKind(event.payload["kind"]), event.recorded_at, event.event_id)
                )
                keys.add(edge[:2])
            elif event.fact_id and (fact := memory.fact(event.fact_id)) is not None:
                keys.add((fact.domain, fact.key))
                touched.add(fact.id)
        if not keys:
            return []
        if asserted is None:
            asserted = asserted_facts(pending, memory.seq)
        known = self.edge_signals(graph)
        # only long-term claims count outside a session, where a freeze is judged: a write
        # that retracts nothing weighs them and its own new facts, not every session's
        # claims of the key; a claim of a session only bears its context slot, which then
        # holds no counted claim (a retraction can leave a slot to session claims alone,
        # and that write reads them all)
        long_term = all(event.type in _KEEPS_SLOTS for event in pending)

        def signals(fact: Fact) -> list[Signal]:
            extra = [
                s
                for t in graph.targets(fact)
                for s in added.get((fact.domain, fact.key, t.value), ())
            ]
            return [*known(fact), *extra]  # fmt: skip

        now, found = self.clock.now(), []
        registry, reader = self.setup.registry, self.setup.reader
        for domain, key in sorted(keys):
            spec = registry.spec(domain, key)
            if spec is None:
                continue
            reviews = self.projections.key_reviews(graph, domain, key)
            before = (memory.live_claims_in(domain, key, Scope.GLOBAL, None) if long_term
                      else memory.live_claims(domain, key))  # fmt: skip
            new = [f for f in asserted.values() if f.key == key and f.domain == domain]
            # asked before the preview, of the slot's claims and the new facts: a write changes
            # statuses only, never a value or a context, so the claims the reader would count
            # after it are among these
            claims_now = [*before, *new]
            slots = _slots(claims_now, spec)
            if not any(edge[:2] == (domain, key) for edge in added):
                # a slot counts only its own claims (``MemoryReader.freezes``): one the write
                # neither adds to nor changes cannot freeze anew, however many the key has
                mine = _slots([f for f in claims_now if f.id in touched], spec)
                slots = {items: slots[items] for items in mine}
            weighed = [items for items, held in sorted(slots.items())
                       if not cannot_freeze(reviews, spec, dict(items), held)]  # fmt: skip
            if not weighed:
                continue  # no slot can freeze anew: the write is not previewed
            claims = preview(before, pending, memory.seq, asserted)
            live = [f for f in claims if (f.domain, f.key) == (domain, key)]
            for items in weighed:
                held = reader.freezes(
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


_KEY_READS_KEPT = 256
"""Sessions whose reads of one key are kept for one state of the key (``KeyReads.keys``), at
most."""

_KEEPS_SLOTS = frozenset({EventType.FACT_ASSERTED, EventType.FACT_SUPERSEDED,
                          EventType.SIGNAL_RECORDED})  # fmt: skip
"""Events after which every claim still bears its context slot (``bears_slot``)."""


Slot = tuple[tuple[str, str], ...]
"""A key slot: the context fields that separate claims, with their values, by name."""


def _slots(facts: Sequence[Fact], spec: KeySpec) -> dict[Slot, list[Fact]]:
    """``facts`` by the slot each is in (``slot`` over the key's context fields)."""
    if not spec.context:  # every fact is in the one slot
        return {(): list(facts)} if facts else {}
    found: dict[Slot, list[Fact]] = {}
    for fact in facts:
        items = tuple(slot(fact.context, spec.context).items()) if fact.context else ()
        found.setdefault(items, []).append(fact)
    return found
