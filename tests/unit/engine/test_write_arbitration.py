"""Arbitration reads the claims that can take part, and answers as a full recompute does.

A write supersedes what it replaces and freezes the key slots it leaves in a strong conflict
(``FactWriter.supersede``; ``Journal.freezes``, which the engine wires to
``Arbiter.freezes``). Both read the key's live claims from the projection's live index and the
key's reviews only, and skip weighing slots that cannot freeze anew. A read (``resolve``, a
decision) weighs only the claims that can take part (``may_take_part``), not the key's whole
history. ``reference_engine`` below is the full recompute these replace: every claim of the
key, whatever its status, filtered and weighed; every review of the user; every slot resolved.
It is the oracle: the same generated operations must leave the same log, byte for byte, and give
the same answers.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import orjson
import pytest

from memkg import Engine, FrozenClock
from memkg.arbitration import MemoryReader, Outcome, Resolution, Review, ReviewStatus
from memkg.arbitration.claims import SignalLookup, build_claims, slot
from memkg.arbitration.memory_arbiter import resolve
from memkg.arbitration.review import frozen_payload, latest_review
from memkg.engine import arbitration, intent
from memkg.engine.facts import IngestResult
from memkg.engine.supersede import replaced_claims
from memkg.events.projection import UserMemory, preview
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import LIVE_STATUSES, Fact
from memkg.model.keyspec import KeySpec
from memkg.model.weight import Signal, SignalKind
from support.observations import T0, obs

AIRLINES = ["airline:MU", "airline:CA", "airline:CZ", "airline:SQ"]
VALUES: dict[str, list[Any]] = {
    "airline.preferred": AIRLINES,
    "seat.preference": ["window", "aisle", "middle"],
    "cabin.class": ["economy", "business"],
    "airline.avoided": [[], ["airline:MU"], ["airline:CA", "airline:CZ"]],
    "travel.companions": [0, 1, 2],
}
CONTEXT_KEYS = ("seat.preference", "cabin.class")


class _FullScan:
    """A user's memory whose live claims are found by walking every claim of the key."""

    def __init__(self, memory: UserMemory) -> None:
        self._memory = memory

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def live_claims(self, domain: str, key: str) -> list[Fact]:
        return [f for f in self._memory.of_key(domain, key) if f.status in LIVE_STATUSES]

    def live_claims_in(self, domain: str, key: str, _scope: Any, _session: Any) -> list[Fact]:
        return self.live_claims(domain, key)  # every scope's: the check keeps its own slot


class ReferenceReader(MemoryReader):
    """Resolves a key slot by weighing every claim of the key, whatever its status."""

    def resolve_key(
        self, facts: Sequence[Fact], signals: SignalLookup, reviews: Sequence[Review],
        spec: KeySpec, now: datetime, *, user_id: str, session_id: str | None = None,
        turn: str | None = None, context: Mapping[str, str] | None = None,
        language: str | None = None,
    ) -> Resolution:  # fmt: skip
        mine = [f for f in facts if (f.domain, f.key) == (spec.domain, spec.key)]
        want = slot(context or {}, spec.context)
        # a slot is read where a claim this read can weigh bears it (another session's does not)
        seen = [f for f in mine if f.scope.value == "global" or f.session_id == session_id]
        if want and not any(slot(f.context, spec.context) == want for f in seen):
            want = {}
        policy, params = self._domain(spec.domain)
        claims = build_claims(mine, now=now, params=params, signals=signals,
                              session_id=session_id, turn=turn)  # fmt: skip
        return resolve(
            claims, policy, now, spec, user_id=user_id, context=want,
            default=None if want else self.defaults.get(spec.domain, spec.key),
            review=latest_review(reviews, spec.domain, spec.key, want),
            questions=self.questions, language=language, labels=self.labels,
        )  # fmt: skip


def reference_engine(clock: FrozenClock) -> Engine:
    """An engine whose arbitration is the full recompute it replaced, on write and on read:
    the reference for its outcomes."""
    engine = Engine(clock=clock)
    loaded = engine.setup.reader
    engine.setup.reader = ReferenceReader(  # type: ignore[misc]
        **{f.name: getattr(loaded, f.name) for f in fields(loaded) if f.init}
    )
    engine.writer.supersede = lambda memory, checked: replaced_claims(
        _FullScan(memory),  # type: ignore[arg-type]
        checked,
    )
    engine.journal.freezes = partial(_reference_freezes, engine)
    return engine


def _reference_freezes(
    engine: Engine,
    written: UserMemory,
    pending: Sequence[NewEvent],
    _asserted: Mapping[str, Fact] | None = None,
) -> list[NewEvent]:
    """``Arbiter.freezes`` as a full recompute: every claim and review of the key, every slot
    (none left out because it cannot freeze), and each new fact read from its pending payload
    (not the facts the journal read); the user's graph and memory looked up again."""
    user_id = written.user_id
    graph, memory = engine.projections.graph(user_id), engine.projections.memory(user_id)
    assert memory is written
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
    reviews = engine.projections.reviews(user_id, graph)
    still_open = {r.review_id for r in reviews if r.status is ReviewStatus.OPEN}
    known = graph.claim_signals

    def signals(fact: Fact) -> list[Signal]:
        extra = [
            s for t in graph.targets(fact) for s in added.get((fact.domain, fact.key, t.value), ())
        ]
        return [*known(fact), *extra]

    now, found = engine.clock.now(), []
    for domain, key in sorted(keys):
        spec = engine.registry.spec(domain, key)
        if spec is None:
            continue
        everything = [f for f in memory.of_key(domain, key) if f.status in LIVE_STATUSES]
        live = [
            f
            for f in preview(everything, pending, memory.seq)
            if (f.domain, f.key) == (domain, key)
        ]
        # judged outside every session: the slots long-term claims bear
        contexts = {tuple(sorted(slot(f.context, spec.context).items()))
                    for f in live if f.scope.value == "global"}  # fmt: skip
        for items in sorted(contexts):
            held = engine.reader.resolve_key(
                live, signals, reviews, spec, now, user_id=user_id, context=dict(items)
            )
            if held.outcome is not Outcome.FROZEN or held.review_id in still_open:
                continue
            review_id = engine.clock.new_id("review")
            found.append(
                NewEvent(
                    event_id=engine.clock.new_id("evt"),
                    type=EventType.KEY_FROZEN,
                    user_id=user_id,
                    domain=domain,
                    payload=frozen_payload(review_id, held),
                    recorded_at=now,
                    fact_id=review_id,
                )
            )
    return found


def _observation(rng: random.Random, user: str, facts: list[Fact]) -> dict[str, Any]:
    key = rng.choice(list(VALUES))
    made = obs(
        user_id=user,
        key=key,
        value=rng.choice(VALUES[key]),
        source=rng.choice(["dialogue", "behavior", "profile", "third_party"]),
        confidence=rng.choice([0.5, 0.7, 0.9, 1.0]),
    )
    draw = rng.random()
    if draw < 0.15:
        made.update(scope="session", session_id=rng.choice(["s1", "s2"]))
    elif draw < 0.25:
        made.update(scope="turn", session_id="s1",
                    provenance={"source_ref": f"turn-{rng.randrange(3)}"})  # fmt: skip
    if key in CONTEXT_KEYS and rng.random() < 0.4:
        made["context"] = {"trip_type": rng.choice(["business", "leisure"])}
    if rng.random() < 0.15:
        made["change"] = True
    if rng.random() < 0.2:
        made["observed_at"] = (T0 + timedelta(hours=rng.randrange(-48, 400))).isoformat()
    same_key = [f for f in facts if f.key == key]
    if same_key and rng.random() < 0.1:
        made["supersedes"] = rng.choice(same_key).id
    return made


def _step(engine: Engine, rng: random.Random, users: list[str]) -> Any:
    """One generated operation; what it picks depends only on ``rng`` and the engine's state.
    Returns what a read answered (None for writes)."""
    user = rng.choice(users)
    facts = sorted(engine.memory(user).facts.values(), key=lambda f: f.id)
    draw = rng.random()
    answer: Any = None
    session = rng.choice([None, "s1", "s2"])
    turn = rng.choice([None, "turn-1"]) if session == "s1" else None
    try:
        if draw < 0.08:
            made = engine.decide(user, "travel", {"airline": rng.choice(AIRLINES)},
                                 session_id=session, turn=turn)  # fmt: skip
            answer = made.model_dump(mode="json", exclude={"timings"})
        elif draw < 0.16:
            key = rng.choice(list(VALUES))
            context = (
                {"trip_type": "business"} if key in CONTEXT_KEYS and rng.random() < 0.5 else None
            )
            held = engine.resolve(
                user, "travel", key, session_id=session, turn=turn, context=context
            )
            answer = held.model_dump(mode="json")
        elif draw < 0.7 or not facts:
            engine.ingest(_observation(rng, user, facts))
        elif draw < 0.8:
            fact = rng.choice(facts)
            if fact.key == "airline.preferred":
                kind = rng.choice(["mention", "correction", "ignored", "rejected"])
                engine.signal(user, "travel", fact.key, fact.value, kind)
        elif draw < 0.87:
            pending = [f for f in facts if f.status.value == "pending_confirmation"]
            if pending:
                engine.confirm(user, rng.choice(pending).id)
        elif draw < 0.92:
            live = [f for f in facts if f.status in LIVE_STATUSES]
            if live:
                engine.retract(user, rng.choice(live).id, "user withdrew it")
        else:
            queue = [r for r in engine.review_queue() if r.user_id == user]
            if queue:
                review = rng.choice(queue)
                engine.resolve_review(review.review_id, rng.choice(VALUES[review.key]), "checked")
    except (ValueError, LookupError):  # a refused write stores nothing in either engine
        pass
    engine.clock.advance(timedelta(minutes=rng.choice([1, 30, 600, 60 * 24 * 20])))  # type: ignore[attr-defined]
    return answer


def _log(engine: Engine) -> bytes:
    return b"\n".join(orjson.dumps(e.model_dump(mode="json")) for e in engine.store.read_all())


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_arbitration_leaves_the_log_and_answers_the_full_recompute_leaves(seed: int) -> None:
    engines = [Engine(clock=FrozenClock(T0)), reference_engine(FrozenClock(T0))]
    rngs = [random.Random(seed), random.Random(seed)]
    users = ["u1", "u2", "u3"]
    answers: list[list[Any]] = [[], []]
    for _ in range(500):
        for engine, rng, said in zip(engines, rngs, answers, strict=True):
            said.append(_step(engine, rng, users))
    fast, reference = (_log(e) for e in engines)
    assert fast == reference
    assert answers[0] == answers[1]
    decided = [a for a in answers[0] if a is not None and "decision_id" in a]
    assert len(decided) >= 20 and any(a["result"]["action"] for a in decided)
    frozen = sum(e.type is EventType.KEY_FROZEN for e in engines[0].store.read_all())
    resolved = sum(e.type is EventType.REVIEW_RESOLVED for e in engines[0].store.read_all())
    assert frozen >= 5 and resolved >= 2  # the workload freezes keys and settles reviews


class Weighed:
    """Counts the claims arbitration weighs, through the arbiter's signal lookup."""

    def __init__(self, engine: Engine) -> None:
        self.count = 0
        lookup = engine.arbiter.edge_signals

        def edge_signals(graph: Any) -> Any:
            signals = lookup(graph)

            def counted(fact: Fact) -> Any:
                self.count += 1
                return signals(fact)

            return counted

        engine.arbiter.edge_signals = edge_signals  # type: ignore[method-assign]


def _write_cost(history: int) -> tuple[int, int, int]:
    """Facts read, claims weighed and stream reads of one contested write to
    ``airline.preferred`` after ``history`` writes of other keys and of the same key."""
    engine = Engine(clock=FrozenClock(T0))
    weighed = Weighed(engine)
    rng = random.Random(5)
    for index in range(history):
        key = ["seat.preference", "cabin.class", "airline.preferred"][index % 3]
        engine.ingest(obs(key=key, value=rng.choice(VALUES[key]), source="behavior"))
    # each behaviour claim of the key restated the one before, which is superseded now
    engine.ingest(obs(value="airline:MU", source="behavior"))
    engine.ingest(obs(value="airline:CA", source="dialogue", confidence=0.5))
    memory = engine.memory("u1")
    assert memory is engine.user_graph("u1").memory  # one fold of the user, not two
    before = (memory.facts_read, weighed.count)
    reads = 0
    read_stream = engine.store.read_stream

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal reads
        reads += 1
        return read_stream(*args, **kwargs)

    engine.store.read_stream = counted  # type: ignore[method-assign]
    result: IngestResult = engine.ingest(obs(value="airline:SQ", source="profile", confidence=0.95))
    assert result.status.value == "active"
    assert engine.memory("u1").seq == result.seq + 1  # the write froze the key
    after = (memory.facts_read, weighed.count)
    return after[0] - before[0], after[1] - before[1], reads


def test_a_write_reads_its_keys_live_claims_whatever_the_users_history() -> None:
    short, long = _write_cost(30), _write_cost(1_500)
    assert short == long
    facts_read, weighed, reads = long
    # the live claims of the key: the behaviour claim and the dialogue claim, read by the
    # supersede check and by the freeze check (before the new claim joins them)
    assert facts_read == 4
    assert weighed == 3  # behaviour, dialogue and the new profile claim
    assert reads == 0  # nothing is rebuilt from the log on write


class Previews:
    """Counts the write previews the freeze check makes (``Arbiter.freezes``), and checks
    each against the preview read from the pending payloads alone: the facts the journal read
    once (``asserted_facts``) must give the same claims, down to field types and fields sets."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0

        def counted(
            facts: Sequence[Fact], pending: Sequence[NewEvent], after_seq: int,
            asserted: Mapping[str, Fact] | None = None,
        ) -> list[Fact]:  # fmt: skip
            self.count += 1
            found = preview(facts, pending, after_seq, asserted)
            read = preview(facts, pending, after_seq)
            assert [repr(f) for f in found] == [repr(f) for f in read]
            assert [f.model_fields_set for f in found] == [f.model_fields_set for f in read]
            return found

        monkeypatch.setattr(arbitration, "preview", counted)


@pytest.mark.parametrize("seed", [5, 17])
def test_slots_that_cannot_freeze_are_not_previewed_and_the_log_is_the_same(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Arbiter.freezes`` leaves out the slots ``MemoryReader.freezes`` would answer without
    weighing (``cannot_freeze``), and a key with no other slot is not previewed: the log is the
    one the check of every slot leaves, byte for byte, with fewer previews."""
    previews = Previews(monkeypatch)
    logs, counts = [], []
    for settled in (arbitration.cannot_freeze, lambda *_args: False):
        monkeypatch.setattr(arbitration, "cannot_freeze", settled)
        previews.count = 0
        engine, rng = Engine(clock=FrozenClock(T0)), random.Random(seed)
        for _ in range(400):
            _step(engine, rng, ["u1", "u2"])
        logs.append(_log(engine))
        counts.append(previews.count)
    assert logs[0] == logs[1]
    assert b"key.frozen" in logs[0] and b'"scope":"turn"' in logs[0]
    assert 0 < counts[0] < counts[1]


def test_a_write_previews_only_a_key_it_can_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    previews = Previews(monkeypatch)
    engine = Engine(clock=FrozenClock(T0))
    engine.ingest(obs(value="airline:MU", source="behavior"))
    engine.ingest(obs(value="airline:MU", source="dialogue"))
    assert previews.count == 0  # one side: nothing to weigh
    engine.ingest(obs(value="airline:CA", source="profile", confidence=0.95))
    assert previews.count == 1
    assert [r.key for r in engine.review_queue()] == ["airline.preferred"]
    engine.ingest(obs(value="airline:SQ", source="profile"))
    engine.ingest(obs(value="airline:CZ", source="dialogue", scope="turn", session_id="s1",
                      provenance={"source_ref": "turn-1"}))  # fmt: skip
    assert previews.count == 1  # the open review holds the key's one slot
    engine.ingest(obs(key="seat.preference", value="window", context={"trip_type": "business"}))
    engine.ingest(obs(key="seat.preference", value="aisle", context={"trip_type": "leisure"}))
    assert previews.count == 1  # one side in each slot
    engine.ingest(obs(key="seat.preference", value="middle", source="profile", confidence=1.0,
                      context={"trip_type": "leisure"}))  # fmt: skip
    assert previews.count == 2


def _cost_beside_sessions(sessions: int) -> tuple[int, int, int]:
    """Facts read by a session note, a turn instruction and a long-term claim of
    ``seat.preference`` after ``sessions`` sessions each left a note of the key (a session's
    notes stay live until it is consolidated or they expire)."""
    engine = Engine(clock=FrozenClock(T0))
    seat = partial(obs, key="seat.preference")
    engine.ingest(seat(value="window", source="profile"))
    engine.ingest(seat(value="aisle", source="behavior"))
    for index in range(sessions):
        engine.ingest(seat(value=VALUES["seat.preference"][index % 3], scope="session",
                           session_id=f"s{index}"))  # fmt: skip
    memory = engine.memory("u1")
    costs = []
    for made in (
        seat(value="middle", scope="session", session_id="s1"),
        seat(value="window", scope="turn", session_id="s2", provenance={"source_ref": "t-1"}),
        seat(value="middle", source="dialogue", confidence=0.6),
    ):
        before = memory.facts_read
        engine.ingest(made)
        assert engine.memory("u1") is memory
        costs.append(memory.facts_read - before)
    return costs[0], costs[1], costs[2]


def test_a_write_reads_its_own_scopes_claims_whatever_the_sessions_before() -> None:
    """Claims of a session count only in it, and a freeze is judged outside every session:
    a write reads the long-term claims of its key and those of its own session, never every
    session's (the cost of a session note grew with the sessions the user ever had)."""
    few, many = _cost_beside_sessions(3), _cost_beside_sessions(300)
    assert few == many
    # the note: its session's note (restated) and the two long-term claims; the instruction:
    # its session's note, then the long-term claims and the session's note it adds; the
    # long-term claim: the two long-term claims, twice (supersede check, freeze check)
    assert many == (3, 4, 4)


def _whole_view(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decisions view every live claim of the domain, as they did before ``claims_in``."""
    build = intent.WeightedGraphView

    def every_claim(*args: Any, keys: Any = None, session_id: Any = None, **kwargs: Any) -> Any:
        return build(*args, **kwargs)

    monkeypatch.setattr(intent, "WeightedGraphView", every_claim)


@pytest.mark.parametrize("seed", [7, 19])
def test_a_decision_viewing_the_claims_it_can_use_decides_as_one_viewing_them_all(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decision's weighted view holds the claims of the keys its table reads (and of every
    entity key, which paths walk) that its session can weigh; the same workload decided with
    a view of every live claim of the domain leaves the same log and the same answers."""
    runs = []
    for whole in (False, True):
        if whole:
            _whole_view(monkeypatch)
        engine, rng = Engine(clock=FrozenClock(T0)), random.Random(seed)
        said = [_step(engine, rng, ["u1", "u2"]) for _ in range(400)]
        runs.append((_log(engine), said))
    assert runs[0] == runs[1]
    decided = [a for a in runs[0][1] if a is not None and "decision_id" in a]
    assert len(decided) >= 15 and any(b'"edges":[{' in orjson.dumps(a) for a in decided)
    assert any(a["request"]["session_id"] for a in decided)


def _view_edges(sessions: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """User edges in the view of a decision made in one session, after ``sessions`` sessions
    each noted the airline the user prefers (an entity key, which the view holds)."""
    engine = Engine(clock=FrozenClock(T0))
    engine.ingest(obs(value="airline:MU", source="profile"))
    for index in range(sessions):
        engine.ingest(obs(value=AIRLINES[index % 4], scope="session", session_id=f"s{index}"))
    seen: list[int] = []
    build = intent.WeightedGraphView

    def counted(*args: Any, **kwargs: Any) -> Any:
        view = build(*args, **kwargs)
        seen.append(sum(len(keys) for keys in view._view._succ[view._node].values()))
        return view

    monkeypatch.setattr(intent, "WeightedGraphView", counted)
    engine.decide("u1", "travel", {"airline": "airline:CA"}, session_id="s1")
    return seen[0]


def test_a_decisions_view_does_not_grow_with_other_sessions_claims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session's claims count only in it: a decision in one session views the long-term
    claim and that session's note, however many sessions noted the key (it viewed them all)."""
    assert _view_edges(3, monkeypatch) == _view_edges(300, monkeypatch) == 2


@pytest.mark.parametrize("slots", [5, 200])
def test_a_write_asks_only_the_slots_it_touches(
    slots: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slot counts only its own claims, so a write previews the slot of the claims it adds
    or changes: with a claim in each of ``slots`` context slots, a write to a new slot asks
    one slot, however many the key has (it asked every slot: a batch into a key of thousands
    of slots took minutes)."""
    engine = Engine(clock=FrozenClock(T0))
    engine.ingest_many([obs(key="seat.preference", value="window", context={"trip_type": f"t{i}"})
                        for i in range(slots)])  # fmt: skip
    asked: list[object] = []
    counted = arbitration.cannot_freeze
    monkeypatch.setattr(arbitration, "cannot_freeze",
                        lambda *a: asked.append(a[2]) or counted(*a))  # fmt: skip
    engine.ingest(obs(key="seat.preference", value="aisle", context={"trip_type": "new"}))
    assert asked == [{"trip_type": "new"}]
    asked.clear()
    engine.ingest(obs(key="seat.preference", value="aisle", context={"trip_type": "t3"},
                      source="behavior"))  # fmt: skip
    assert asked == [{"trip_type": "t3"}]
