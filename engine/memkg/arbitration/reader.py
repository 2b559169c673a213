"""Reads of memory through arbitration: from a user's facts, signals and reviews to resolutions.

Pure: the engine hands in what it read and writes what comes back (a newly frozen key).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from memkg.arbitration.claims import (
    COUNTED,
    SignalLookup,
    current_turn,
    may_take_part,
    slot,
    tier_of,
)
from memkg.arbitration.defaults import RoleDefaults
from memkg.arbitration.lineup import Entrant, Lineup
from memkg.arbitration.policy import Policy, PolicyFile
from memkg.arbitration.questions import QuestionBook
from memkg.arbitration.resolution import Outcome, Resolution
from memkg.arbitration.review import Review, ReviewStatus, latest_review
from memkg.arbitration.support import side
from memkg.model.fact import Fact, FactStatus, Scope
from memkg.model.keyspec import KeySpec
from memkg.model.weight import Signal, WeightParams, credibility_of

_LINEUPS_KEPT = 256
"""Slots lined up per state of one key (``KeyFacts.lineups``), at most."""

SlotItems = tuple[tuple[str, str], ...]
"""A context slot as its fields' names and values, in the order of the names."""

_NO_TURN: frozenset[str] = frozenset()


@dataclass(frozen=True)
class MemoryReader:
    """The arbitration configuration, loaded once; resolves keys of any user."""

    policy: PolicyFile = field(default_factory=PolicyFile)
    questions: QuestionBook = field(default_factory=lambda: QuestionBook({}))
    defaults: RoleDefaults = field(default_factory=RoleDefaults)
    weights: WeightParams = field(default_factory=WeightParams)
    labels: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(entity reference, language) → label, for questions."""
    _domains: dict[str, tuple[Policy, WeightParams]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Per domain, its policy and weight parameters: the configuration is frozen, so they are
    worked out on the first read of the domain only."""

    def _domain(self, domain: str) -> tuple[Policy, WeightParams]:
        found = self._domains.get(domain)
        if found is None:
            policy = self.policy.for_domain(domain)
            params = self.weights
            if policy.credibility:
                merged = {**params.credibility, **policy.credibility}
                params = params.model_copy(update={"credibility": merged})
            found = self._domains[domain] = (policy, params)
        return found

    def params(self, domain: str) -> WeightParams:
        """The weight parameters with the domain's credibility overrides."""
        return self._domain(domain)[1]

    def policy_of(self, domain: str) -> Policy:
        """The domain's arbitration policy (its bands, staleness), worked out once."""
        return self._domain(domain)[0]

    def resolve_key(
        self,
        facts: Sequence[Fact],
        signals: SignalLookup,
        reviews: Sequence[Review],
        spec: KeySpec,
        now: datetime,
        *,
        user_id: str,
        session_id: str | None = None,
        turn: str | None = None,
        context: Mapping[str, str] | None = None,
        language: str | None = None,
    ) -> Resolution:
        """One key slot; a context with no claims of its own falls back to the general slot."""
        mine = [f for f in facts if (f.domain, f.key) == (spec.domain, spec.key)]
        return self.resolve_read(
            KeyFacts.of(mine, spec), signals, reviews, spec, now, user_id=user_id,
            session_id=session_id, turn=turn, context=context, language=language,
        )  # fmt: skip

    def resolve_read(
        self,
        key: KeyFacts,
        signals: SignalLookup,
        reviews: Sequence[Review],
        spec: KeySpec,
        now: datetime,
        *,
        user_id: str,
        session_id: str | None = None,
        turn: str | None = None,
        context: Mapping[str, str] | None = None,
        language: str | None = None,
        slot: tuple[dict[str, str], Review | None] | None = None,
    ) -> Resolution:
        """``resolve_key`` over the key's facts as ``KeyFacts`` holds them (``spec``'s key).

        When ``key`` holds the claims' signals (read from the same state of the user's graph),
        the slot's ``Lineup`` (all of the policy that does not move with time) is kept in
        ``key`` for this reader, declaration, session, turn, context slot, language and
        review, so a read at another time only weighs the claims and settles the outcome.
        ``slot``: the context slot ``context`` reads (``KeyFacts.slot_read``) and the review
        governing it (``latest_review``), when the caller has worked them out already.
        """
        if slot is None:
            want = key.slot_read(context, spec, session_id, turn)
            review = latest_review(reviews, spec.domain, spec.key, want)
        else:
            want, review = slot
        read = (user_id, session_id, turn, tuple(want.items()), language)
        kept = key.lineups.get(read) if key.signals is not None else None
        if kept is not None and kept[0] is self and kept[1] is spec and kept[2] == review:
            return kept[3].resolve(now)
        policy, params = self._domain(spec.domain)
        turn_ids = key.turn_ids(session_id, turn)
        entrants = []
        for fact in key.taking:
            tier = tier_of(fact, session_id, turn_ids)
            if tier is None:
                continue
            credibility_of(params, fact.source.value)  # an undeclared source fails every read
            entrants.append(Entrant(fact, tier, signals=tuple(signals(fact)), params=params))
        lineup = Lineup(
            entrants,
            policy,
            spec,
            user_id=user_id,
            context=want,
            default=None if want else self.defaults.get(spec.domain, spec.key),
            review=review,
            questions=self.questions,
            language=language,
            labels=self.labels,
        )
        if key.signals is not None:
            if len(key.lineups) >= _LINEUPS_KEPT:
                key.lineups.clear()  # many sessions or turns read one state: start over
            key.lineups[read] = (self, spec, review, lineup)
        return lineup.resolve(now)

    def freezes(
        self,
        facts: Sequence[Fact],
        signals: SignalLookup,
        reviews: Sequence[Review],
        spec: KeySpec,
        now: datetime,
        *,
        user_id: str,
        context: Mapping[str, str] | None = None,
    ) -> Resolution | None:
        """The slot's resolution (read outside any session) when it freezes anew, else None.

        What a write asks of each key slot it touches. Two cases are answered without
        weighing a claim, since ``resolve`` could not freeze them anew: an open review already
        holds the slot; or no reviewer's value competes and every counted claim (active or
        frozen, long-term, not expired) backs one side, so the conflict strength is 0.
        """
        mine, want = _slot_facts(facts, spec, context)
        counted = [
            f
            for f in mine
            if f.status in COUNTED
            and tier_of(f, None, set()) is not None
            and slot(f.context, spec.context) == want
            and (f.valid_until is None or f.valid_until > now)
        ]
        if cannot_freeze(reviews, spec, want, counted):
            return None
        key = KeyFacts.of(mine, spec)
        if key.slot_read(want, spec) != want:
            # only a session's or a turn's claims bear the slot: outside every session it
            # reads as the general slot, which a write asks on its own
            return None
        held = self.resolve_read(key, signals, reviews, spec, now, user_id=user_id, context=want)
        return held if held.outcome is Outcome.FROZEN else None

    def resolve_domain(
        self,
        facts: Sequence[Fact],
        signals: SignalLookup,
        reviews: Sequence[Review],
        specs: Sequence[KeySpec],
        now: datetime,
        *,
        user_id: str,
        session_id: str | None = None,
        turn: str | None = None,
        language: str | None = None,
    ) -> list[Resolution]:
        """Every key slot that has facts or a role default, each context slot on its own."""
        found = []
        for spec in specs:
            slots = {
                tuple(sorted(slot(f.context, spec.context).items()))
                for f in facts
                if (f.domain, f.key) == (spec.domain, spec.key)
            }
            if self.defaults.get(spec.domain, spec.key) is not None:
                slots.add(())
            for items in sorted(slots):
                resolution = self.resolve_key(
                    facts, signals, reviews, spec, now, user_id=user_id, session_id=session_id,
                    turn=turn, context=dict(items), language=language,
                )  # fmt: skip
                if resolution.context != dict(items):
                    continue  # no fact the read weighs bears the slot: the general one's read
                if resolution.claims or resolution.value is not None:
                    found.append(resolution)
        return found


def _slot_facts(
    facts: Sequence[Fact], spec: KeySpec, context: Mapping[str, str] | None
) -> tuple[list[Fact], dict[str, str]]:
    """The facts of the key, and the context slot a read of ``context`` resolves: a context
    with no claims of its own falls back to the general slot."""
    mine = [f for f in facts if (f.domain, f.key) == (spec.domain, spec.key)]
    want = slot(context or {}, spec.context)
    if want and not any(slot(f.context, spec.context) == want for f in mine if bears_slot(f)):
        want = {}
    return mine, want


def bears_slot(fact: Fact) -> bool:
    """Whether ``fact`` gives its context slot claims of its own, so a read of that context
    resolves the slot rather than the general one: every fact but a retracted one (forgotten:
    a read tells it from a fact never stored only by its history)."""
    return fact.status is not FactStatus.RETRACTED


@dataclass(frozen=True)
class KeyFacts:
    """One key's facts as every read of it needs them, whatever its time, session or context:
    worked out once per state of the user's memory (the engine keeps them while the memory
    stands), not once per read."""

    facts: tuple[Fact, ...]
    """Every fact of the key, whatever its status, in the order asserted; or all of them but
    facts no read tells apart (``claims.silent``), which a restore may leave unread; or those
    of them that reads in one session (or outside every session) can weigh: the long-term
    ones and the session's (``UserMemory.bearing_in``)."""
    taking: tuple[Fact, ...]
    """Those a read can list (``may_take_part``), in the same order."""
    spec: KeySpec
    """The key's declaration (its context fields tell its slots)."""
    signals: dict[str, tuple[Signal, ...]] | None = None
    """Per fact id of ``taking``, the signals its claim is weighed with, when they are read
    from the same state of the user's graph as the facts: filled as reads weigh them
    (``lookup``)."""
    lineups: dict[tuple[Any, ...], tuple[MemoryReader, KeySpec, Review | None, Lineup]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """Slots lined up by ``MemoryReader.resolve_read``, by reader, declaration and read: kept
    only when ``signals`` is (the claims are then weighed with what the state holds)."""
    read_slots: dict[tuple[str | None, str | None], frozenset[SlotItems]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """``slots`` by session and turn read, once worked out (each read of a context asks)."""
    read_turns: dict[tuple[str, str | None], frozenset[str]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """``turn_ids`` by session and turn read, once worked out."""

    @classmethod
    def of(
        cls, facts: Sequence[Fact], spec: KeySpec, *, keep_signals: bool = False,
        holding: Container[str] | None = None,
    ) -> KeyFacts:  # fmt: skip
        """``facts``: every fact of ``spec``'s key, in the order asserted; ``keep_signals``:
        keep each claim's signals once a read has weighed it (``lookup``), for reads of the
        same state of the user's graph.

        ``holding``, when ``facts`` holds only the facts one session's reads can weigh
        (``UserMemory.bearing_in``): the ids of the key's live facts, which tell which
        superseded facts still take part (``may_take_part``)."""
        taking = tuple(may_take_part(facts, holding))
        kept: dict[str, tuple[Signal, ...]] | None = {} if keep_signals else None
        return cls(tuple(facts), taking, spec, kept)

    @cached_property
    def _borne(self) -> tuple[frozenset[SlotItems], tuple[Fact, ...]]:
        """The context slots the key's long-term facts bear (``bears_slot``), and its session
        and turn facts: which of those a read weighs depends on its session and turn. Worked
        out for the first read of a context slot."""
        fields, general, local = self.spec.context, set(), []
        for fact in self.facts:
            if fact.scope is not Scope.GLOBAL:
                local.append(fact)
            elif bears_slot(fact):
                general.add(tuple(slot(fact.context, fields).items()) if fact.context else ())
        return frozenset(general), tuple(local)

    def slots(self, session_id: str | None = None, turn: str | None = None) -> frozenset[SlotItems]:
        """The context slots a read in ``session_id``'s session and ``turn`` resolves on their
        own: those borne (``bears_slot``) by a fact the read weighs (``tier_of``). Another
        session's note, or another turn's instruction, gives no slot to a read it takes no
        part in; a key with no context fields has the one slot while it has facts."""
        fields = self.spec.context
        if not fields:
            return frozenset({()}) if self.facts else frozenset()
        general, local = self._borne
        if session_id is None or not local:
            return general
        found = self.read_slots.get((session_id, turn))
        if found is None:
            turn_ids = self.turn_ids(session_id, turn)
            mine = {tuple(slot(f.context, fields).items()) if f.context else ()
                    for f in local
                    if bears_slot(f) and tier_of(f, session_id, turn_ids) is not None}  # fmt: skip
            found = general | mine if mine - general else general
            if len(self.read_slots) >= _LINEUPS_KEPT:
                self.read_slots.clear()  # many sessions or turns read one state: start over
            self.read_slots[(session_id, turn)] = found
        return found

    def turn_ids(self, session_id: str | None, turn: str | None) -> frozenset[str]:
        """Ids of the claims that are the instruction of the turn read (``current_turn``):
        found among the key's session and turn facts, as only those can be; worked out once
        per session and turn read."""
        if session_id is None:
            return _NO_TURN
        found = self.read_turns.get((session_id, turn))
        if found is None:
            found = frozenset(current_turn(self._borne[1], session_id, turn))
            if len(self.read_turns) >= _LINEUPS_KEPT:
                self.read_turns.clear()  # many sessions or turns read one state: start over
            self.read_turns[(session_id, turn)] = found
        return found

    def lookup(self, signals: SignalLookup) -> SignalLookup:
        """``signals`` (the lookup of the graph state the facts were read from), each claim's
        read once and kept when the facts keep signals."""
        kept = self.signals
        if kept is None:
            return signals

        def read(fact: Fact) -> Sequence[Signal]:
            found = kept.get(fact.id)
            if found is None:
                found = kept[fact.id] = tuple(signals(fact))
            return found

        return read

    def slot_read(
        self, context: Mapping[str, str] | None, spec: KeySpec,
        session_id: str | None = None, turn: str | None = None,
    ) -> dict[str, str]:  # fmt: skip
        """The context slot a read of ``context`` in ``session_id``'s session and ``turn``
        resolves: a context with no claims of its own there (``slots``) falls back to the
        general slot (as ``_slot_facts``)."""
        want = slot(context or {}, spec.context)
        if want and tuple(want.items()) not in self.slots(session_id, turn):
            return {}
        return want


_NO_VALUE = object()
"""A value no fact holds: what ``cannot_freeze`` compares the first fact's value with."""


def cannot_freeze(
    reviews: Sequence[Review], spec: KeySpec, want: dict[str, str], facts: Sequence[Fact]
) -> bool:
    """Whether the slot ``want`` of ``spec``'s key cannot freeze anew, told without weighing a
    claim: an open review already holds it; or no reviewer's value competes and ``facts``
    (the slot's counted claims, or any set of facts that holds them) back one side at most,
    so the conflict strength is 0. ``MemoryReader.freezes`` asks it of the counted claims; a
    write asks it of the slot's claims and its new facts before previewing anything."""
    review = latest_review(reviews, spec.domain, spec.key, want) if reviews else None
    if review is not None:
        return review.status is ReviewStatus.OPEN
    first: str | None = None
    value: Any = _NO_VALUE
    for fact in facts:
        if fact.value is value:
            continue  # the same object backs the same side (folded texts are shared)
        value, backs = fact.value, side(fact.value, spec.multi)
        if first is None:
            first = backs
        elif backs != first:
            return False
    return True
