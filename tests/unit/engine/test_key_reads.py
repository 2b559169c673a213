"""What a decision reads of each key is worked out once per state of the key in the user's
graph: a second decision for an unchanged user reads no key's history again (one after a
write reads the written key's only), at the same time, session, turn and context resolves
no key slot again, and at a later time lines no slot's claims up again (it only weighs
them). Counted, never timed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.arbitration import reader
from memkg.arbitration.lineup import Lineup
from memkg.arbitration.reader import MemoryReader
from memkg.model.decision import Decision
from support.observations import T0

OFFERS = {"trip_type": "leisure"}


def _seat(engine: Engine, value: str, **fields: object) -> None:
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "seat.preference", "value": value,
                   "source": "dialogue", "confidence": 0.9, **fields})  # fmt: skip


def _offers(engine: Engine, **scope: str) -> Decision:
    return engine.decide("u1", "travel", OFFERS, decision="offers", **scope)


def _history(engine: Engine, clock: FrozenClock, restated: int) -> None:
    for index in range(restated):
        _seat(engine, ["window", "aisle"][index % 2])
        clock.advance(timedelta(minutes=1))
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "cabin.class", "value": "first",
                   "source": "dialogue", "context": {"trip_type": "leisure"}})  # fmt: skip


def test_a_second_decision_reads_no_keys_history_while_the_user_is_unchanged(
    engine: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(engine, clock, 40)
    memory = engine.memory("u1")
    before = memory.facts_read
    first = _offers(engine)
    read_first = memory.facts_read - before
    # the claims a read can list and the facts not superseded, not the 40 restatements
    assert 0 < read_first <= 6

    for scope in ({}, {"session_id": "s1"}, {"session_id": "s1", "turn": "t1"}):
        clock.advance(timedelta(seconds=1))
        before = memory.facts_read
        again = _offers(engine, **scope)
        assert memory.facts_read == before, scope
        assert again.explanation.memory[0].key == first.explanation.memory[0].key
        for node in again.explanation.memory:
            held = engine.resolve("u1", "travel", node.key, context=OFFERS, **scope)
            assert node.value == held.value, node.key
        assert engine.replay(again.decision_id).reproduced

    keys_read: list[str] = []
    bearing = memory.bearing_in

    def counted(domain: str, key: str, session_id: str | None) -> Any:
        keys_read.append(key)
        return bearing(domain, key, session_id)

    monkeypatch.setattr(memory, "bearing_in", counted)
    _seat(engine, "window")  # a write: its key is read again, with it; the cabin class not
    before = memory.facts_read
    after = _offers(engine)
    assert keys_read == ["seat.preference"]
    # a claim in, its restated one out; the cabin class's one fact kept as it was read
    assert memory.facts_read - before == read_first - 1
    assert [m.value for m in after.explanation.memory if m.key == "seat.preference"] == ["window"]
    assert engine.replay(after.decision_id).reproduced

    keys_read.clear()
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "cabin.class", "value": "economy",
                   "source": "dialogue", "context": {"trip_type": "leisure"}})  # fmt: skip
    later = _offers(engine)
    assert keys_read == ["cabin.class"]
    assert [m.value for m in later.explanation.memory if m.key == "cabin.class"] == ["economy"]
    assert engine.replay(later.decision_id).reproduced


def _record(made: Decision) -> str:
    """The record but for what differs between two decisions: their ids and timings."""
    text = made.model_copy(update={"timings": {}}).model_dump_json()
    return text.replace(made.decision_id, "dec").replace(made.trace_id or "trc", "trc")


class _Resolutions:
    """Key slots resolved (``MemoryReader.resolve_read`` calls), counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = MemoryReader.resolve_read

        def counted(reader: MemoryReader, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(reader, *args, **kwargs)

        monkeypatch.setattr(MemoryReader, "resolve_read", counted)

    def during(self, call: Callable[[], Any]) -> int:
        before = self.count
        call()
        return self.count - before


def test_a_key_slot_is_resolved_once_per_time_session_turn_and_context(
    engine: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(engine, clock, 6)
    resolutions = _Resolutions(monkeypatch)
    first = _offers(engine)
    keys = len(first.explanation.memory)
    assert keys >= 2

    same: list[Decision] = []
    assert resolutions.during(lambda: same.append(_offers(engine))) == 0
    assert _record(same[0]) == _record(first)
    held = engine.resolve("u1", "travel", "cabin.class", context=OFFERS)
    assert resolutions.during(lambda: engine.resolve("u1", "travel", "cabin.class",
                                                     context=OFFERS)) == 0  # fmt: skip
    assert held.value == "first"

    # each thing a resolution depends on besides the key's facts resolves the slots again
    assert resolutions.during(lambda: _offers(engine, session_id="s1")) >= keys
    assert resolutions.during(lambda: _offers(engine, session_id="s1", turn="t1")) >= keys
    assert resolutions.during(lambda: engine.resolve("u1", "travel", "cabin.class")) == 1
    assert resolutions.during(lambda: engine.resolve("u1", "travel", "cabin.class",
                                                     language="de")) == 1  # fmt: skip
    clock.advance(timedelta(seconds=1))
    later: list[Decision] = []
    assert resolutions.during(lambda: later.append(_offers(engine))) >= keys
    assert later[0].decided_at != first.decided_at
    _seat(engine, "window", source="behavior")  # at the same time: the seat's slot only
    written: list[Decision] = []
    assert resolutions.during(lambda: written.append(_offers(engine))) == 1

    for made in (first, same[0], later[0], written[0]):
        assert engine.replay(made.decision_id).reproduced


def test_a_resolved_slot_is_kept_only_for_the_review_it_saw(
    engine: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seat(engine, "window", source="dialogue", confidence=0.9)
    _seat(engine, "aisle", source="behavior", confidence=0.95)  # a conflict: the key freezes
    graph = engine.projections.graph("u1")
    reviews = engine.projections.reviews("u1", graph)
    assert len(reviews) == 1
    spec = engine.setup.key_spec("travel", "seat.preference")
    resolutions = _Resolutions(monkeypatch)

    def resolution(given: list[Any]) -> Any:
        return engine.arbiter.resolution(graph, given, spec, clock.now(), session_id=None,
                                         turn=None, context=None)  # fmt: skip

    held: list[Any] = []
    assert resolutions.during(lambda: held.append(resolution(reviews))) == 1
    assert resolutions.during(lambda: held.append(resolution(list(reviews)))) == 0
    assert resolutions.during(lambda: held.append(resolution([]))) == 1
    assert [h.review_id for h in held] == [reviews[0].review_id] * 2 + [None]


def test_a_signal_is_weighed_by_the_next_read(engine: Engine, clock: FrozenClock) -> None:
    """A claim's signals are read with the key's facts and kept as long as they are: a
    signal recorded after a read is weighed by the next one, at any time."""
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "airline.preferred",
                   "value": "airline:MU", "source": "dialogue", "confidence": 0.9})  # fmt: skip
    [plain] = engine.resolve("u1", "travel", "airline.preferred").claims
    clock.advance(timedelta(minutes=1))
    engine.signal("u1", "travel", "airline.preferred", "airline:MU", "mention")
    for _ in range(2):  # the second read, a minute on, weighs what the first kept
        [mentioned] = engine.resolve("u1", "travel", "airline.preferred").claims
        assert "mention" in [f.name for f in mentioned.weight.factors]
        assert mentioned.score > plain.score
        clock.advance(timedelta(minutes=1))
    engine.signal("u1", "travel", "airline.preferred", "airline:MU", "rejected")
    [rejected] = engine.resolve("u1", "travel", "airline.preferred").claims
    assert "rejection" in [f.name for f in rejected.weight.factors]
    assert rejected.score < mentioned.score


class _Lineups:
    """Key slots lined up (the policy's time-independent part, ``Lineup``), counted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        outer = self

        class Counted(Lineup):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                outer.count += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(reader, "Lineup", Counted)

    def during(self, call: Callable[[], Any]) -> int:
        before = self.count
        call()
        return self.count - before


def test_a_later_decision_weighs_claims_again_but_lines_no_slot_up_again(
    engine: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history(engine, clock, 6)
    lineups, resolutions = _Lineups(monkeypatch), _Resolutions(monkeypatch)
    made: list[Decision] = []
    assert lineups.during(lambda: made.append(_offers(engine))) >= 2
    assert lineups.during(lambda: made.append(_offers(engine, session_id="s1"))) >= 2

    for step in (timedelta(seconds=1), timedelta(days=3), timedelta(days=400)):
        clock.advance(step)
        for scope in ({}, {"session_id": "s1"}):
            lined_up = lineups.count
            weighed = resolutions.during(lambda s=scope: made.append(_offers(engine, **s)))
            assert weighed >= 2  # every slot read is weighed at the new time...
            assert lineups.count == lined_up, (step, scope)  # ...none lined up again
            assert made[-1].decided_at == clock.now()
    assert lineups.during(lambda: made.append(_offers(engine, session_id="s2"))) >= 2

    _seat(engine, "window", source="behavior")  # a write: the written key's slot lined up
    assert lineups.during(lambda: made.append(_offers(engine))) == 1  # again, no other
    clock.advance(timedelta(seconds=1))
    assert lineups.during(lambda: made.append(_offers(engine))) == 0
    for decision in made:
        assert engine.replay(decision.decision_id).reproduced


def _after_a_write(restated: int) -> tuple[int, Decision, Engine]:
    """Facts a decision read right after a write, for a user whose seat was restated
    ``restated`` times before: what an agent's turn does (write, then decide)."""
    clock = FrozenClock(T0)
    engine = Engine(clock=clock)
    _history(engine, clock, restated)
    _offers(engine)
    _seat(engine, "window")
    clock.advance(timedelta(seconds=1))
    memory = engine.memory("u1")
    before = memory.facts_read
    made = _offers(engine)
    return memory.facts_read - before, made, engine


def test_a_decision_after_a_write_reads_no_more_the_longer_the_history() -> None:
    """Claims restated by their own source no read lists again (superseded for good, of no
    context or scope: ``model.fact.spent``) are not read by the decision after a write, nor
    lined up: what it reads is the same after 20 restatements as after 400."""
    short, made_short, engine_short = _after_a_write(20)
    long, made_long, engine_long = _after_a_write(400)
    assert short == long, (short, long)
    assert short <= 6  # the seat's claim that holds, and the cabin's; not their history
    for made, engine in ((made_short, engine_short), (made_long, engine_long)):
        assert [m.value for m in made.explanation.memory if m.key == "seat.preference"] == [
            "window"
        ]
        assert engine.replay(made.decision_id).reproduced
        # what the decision resolved is what a fresh fold of the whole log resolves
        for node in made.explanation.memory:
            assert node.value == engine.resolve("u1", "travel", node.key, context=OFFERS).value
    engine_short.close()
    engine_long.close()


class _Walks(dict[str, Any]):
    """A user's fact table that counts the walks over it (the reads of one id are free)."""

    walks = 0

    def values(self) -> Any:
        _Walks.walks += 1
        return super().values()

    def items(self) -> Any:
        _Walks.walks += 1
        return super().items()

    def __iter__(self) -> Any:
        _Walks.walks += 1
        return super().__iter__()


def test_a_profile_reads_each_key_as_a_decision_does(
    engine: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``render_profile`` (every turn of an agent) resolves each key through the path that
    decisions and ``resolve`` take: no walk of the user's history, whatever its length, and
    at a later time no slot lined up again; what it shows is what ``resolve`` answers."""
    _history(engine, clock, 40)
    lineups = _Lineups(monkeypatch)
    first = engine.render_profile("u1", "travel")
    memory = engine.memory("u1")
    memory._facts = _Walks(memory._facts)  # type: ignore[attr-defined]
    for step in (timedelta(seconds=1), timedelta(days=3)):
        clock.advance(step)
        lined_up, walks = lineups.count, _Walks.walks
        again = engine.render_profile("u1", "travel")
        assert lineups.count == lined_up, step
        assert _Walks.walks == walks, step
        assert [i.ref for i in again.included] == [i.ref for i in first.included]
    assert [i.ref for i in first.included] == [
        "key:cabin.class", "key:cabin.class[trip_type=leisure]", "key:seat.preference"
    ]
    _seat(engine, "middle")
    walks = _Walks.walks
    after = engine.render_profile("u1", "travel")
    assert _Walks.walks == walks
    lines = {i.ref: i.line for i in after.included}
    assert 'value: "middle"' in lines["key:seat.preference"]
    held = engine.resolve("u1", "travel", "cabin.class", context={"trip_type": "leisure"})
    assert f'value: "{held.value}"' in lines["key:cabin.class[trip_type=leisure]"]


def test_what_reads_keep_per_session_goes_when_the_user_moves(
    engine: Engine, clock: FrozenClock
) -> None:
    """Reads in many sessions keep their facts per session (``KeyReads.keys``, the decision's
    facts, the view's claims); a write to the user drops them all, not one per session: what is
    kept is of the current state, however many sessions read an older one."""
    _seat(engine, "aisle", source="profile")
    for index in range(40):
        _seat(engine, "window", scope="session", session_id=f"s{index}")
    for index in range(40):
        _offers(engine, session_id=f"s{index}")
    graph = engine.user_graph("u1")
    reads = engine.projections.key_reads.of(graph).keys[("travel", "seat.preference")][2]
    live = engine.projections._live._by_user["u1"][1]  # type: ignore[attr-defined]
    claims = graph._key_claims[("travel", "seat.preference")][1]  # type: ignore[attr-defined]
    assert (len(reads), len(live), len(claims)) == (40, 40, 41)  # each session's, and the rest

    clock.advance(timedelta(minutes=1))
    _seat(engine, "middle", scope="session", session_id="s3")
    _offers(engine, session_id="s3")
    graph = engine.user_graph("u1")
    reads = engine.projections.key_reads.of(graph).keys[("travel", "seat.preference")][2]
    live = engine.projections._live._by_user["u1"][1]  # type: ignore[attr-defined]
    claims = graph._key_claims[("travel", "seat.preference")][1]  # type: ignore[attr-defined]
    assert (set(reads), len(live), set(claims)) == ({"s3"}, 1, {None, "s3"})


def test_which_context_slots_a_turn_reads_is_worked_out_once_per_state(
    engine: Engine, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which slots a read in a session and turn resolves on their own depends on the turn's
    instructions: worked out once per state of the key and read, not on every read (it costs
    the session's facts of the key, which grow with its turns)."""
    for n in range(40):
        clock.advance(timedelta(seconds=1))
        _seat(engine, ["window", "aisle"][n % 2], scope="turn", session_id="s1",
              context={"trip_type": ["leisure", "business"][n % 3 == 0]},
              provenance={"source_ref": f"t{n}"})  # fmt: skip
    calls = []
    counted = reader.current_turn

    def current_turn(*args: Any) -> set[str]:
        calls.append(args[1:])
        return counted(*args)

    monkeypatch.setattr(reader, "current_turn", current_turn)
    for scope in ({"session_id": "s1"}, {"session_id": "s1", "turn": "t3"}):
        for _ in range(5):
            for moment in range(2):  # the same state read at two times
                clock.advance(timedelta(seconds=moment))
                engine.resolve("u1", "travel", "seat.preference", context=OFFERS, **scope)
    assert len(calls) == 2 and set(calls) == {("s1", None), ("s1", "t3")}
