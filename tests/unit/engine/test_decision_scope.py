"""A decision sees turn and session claims only in their turn and session, and uses for every
key the value ``resolve`` gives for the same user, domain, key, session and turn."""

from __future__ import annotations

from datetime import timedelta

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision

OFFERS = {"trip_type": "leisure"}


def _seat(engine: Engine, value: str, **fields: object) -> None:
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "seat.preference", "value": value,
                   "source": "dialogue", "confidence": 0.9, **fields})  # fmt: skip


def _offers(engine: Engine, **scope: str) -> Decision:
    return engine.decide("u1", "travel", OFFERS, decision="offers", **scope)


def _memory(decision: Decision, key: str) -> object:
    [node] = [m for m in decision.explanation.memory if m.key == key]
    return node.value


def test_a_turn_instruction_counts_only_in_its_turn(engine: Engine, clock: FrozenClock) -> None:
    _seat(engine, "aisle")
    clock.advance(timedelta(minutes=1))
    _seat(engine, "window", scope="turn", session_id="s9", provenance={"source_ref": "t3"})

    outside = _offers(engine)
    assert engine.resolve("u1", "travel", "seat.preference").value == "aisle"
    assert outside.result.action is None or "offer_window_seat" not in str(outside.result)
    assert _memory(outside, "seat.preference") == "aisle"
    # a claim of a session counts only there: outside it, it is not even listed as left out
    assert not [lo for lo in outside.left_out if lo.key == "seat.preference"]
    another_turn = _offers(engine, session_id="s9", turn="t4")
    left = {lo.ref: lo.reason for lo in another_turn.left_out if lo.key == "seat.preference"}
    # the long-term claim loses to the session's note; its instruction of another turn is
    # out of scope
    assert sorted(left.values()) == ["lost_arbitration", "out_of_scope"]

    inside = _offers(engine, session_id="s9", turn="t3")
    assert "offer_window_seat" in str(inside.result.parameters)
    assert _memory(inside, "seat.preference") == "window"
    assert inside.request.session_id == "s9" and inside.request.turn == "t3"
    assert engine.replay(inside.decision_id).reproduced

    other = _offers(engine, session_id="s2")
    assert "offer_window_seat" not in str(other.result.parameters)

    clock.advance(timedelta(days=10))
    later = _offers(engine)
    assert "offer_window_seat" not in str(later.result.parameters)


def test_a_session_note_counts_in_its_session(engine: Engine) -> None:
    _seat(engine, "aisle")
    _seat(engine, "window", scope="session", session_id="s1")
    assert "offer_window_seat" in str(_offers(engine, session_id="s1").result.parameters)
    assert "offer_window_seat" not in str(_offers(engine).result.parameters)
    assert "offer_window_seat" not in str(_offers(engine, session_id="s2").result.parameters)


def test_every_key_a_decision_reads_has_the_value_resolve_gives(engine: Engine) -> None:
    _seat(engine, "window")
    _seat(engine, "aisle", source="behavior")
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "cabin.class", "value": "first",
                   "source": "dialogue", "context": {"trip_type": "leisure"}})  # fmt: skip
    for scope in ({}, {"session_id": "s1"}, {"session_id": "s1", "turn": "t1"}):
        made = _offers(engine, **scope)
        for node in made.explanation.memory:
            held = engine.resolve("u1", "travel", node.key, context=OFFERS, **scope)
            assert node.value == held.value, node.key


def test_another_sessions_note_of_a_context_leaves_that_context_to_long_term_memory(
    engine: Engine,
) -> None:
    """A session's note of one context slot counts only in its session: elsewhere a read of
    that context falls back to the general slot, as if the note did not exist (outside the
    session it read no value at all, and the decision lost the user's seat)."""
    _seat(engine, "aisle", source="profile")
    _seat(engine, "window", scope="session", session_id="s1", context=OFFERS)
    for scope in ({}, {"session_id": "s2"}):
        held = engine.resolve("u1", "travel", "seat.preference", context=OFFERS, **scope)
        assert (held.value, held.context) == ("aisle", {})
        made = _offers(engine, **scope)
        assert _memory(made, "seat.preference") == "aisle"
        assert "offer_window_seat" not in str(made.result.parameters)
        assert engine.replay(made.decision_id).reproduced
    inside = engine.resolve("u1", "travel", "seat.preference", session_id="s1", context=OFFERS)
    assert (inside.value, inside.context) == ("window", OFFERS)
    assert "offer_window_seat" in str(_offers(engine, session_id="s1").result.parameters)


def test_an_earlier_turns_instruction_of_a_context_leaves_that_context_to_the_turns_after_it(
    engine: Engine,
) -> None:
    """A turn instruction counts only in its turn: in the session's later turns, once the
    session note it left is retracted, a read of its context falls back to the general slot,
    as if the instruction did not exist (it read no value at all there, and the decision lost
    the user's seat)."""
    _seat(engine, "aisle", source="profile")
    _seat(engine, "window", scope="turn", session_id="s1", context=OFFERS,
          provenance={"source_ref": "t1"})  # fmt: skip
    [note] = [f for f in engine.facts("u1", "travel") if f.scope.value == "session"]
    engine.retract("u1", note.id, "said for that turn only")
    for scope in ({"session_id": "s1", "turn": "t2"}, {"session_id": "s2", "turn": "t1"}, {}):
        held = engine.resolve("u1", "travel", "seat.preference", context=OFFERS, **scope)
        assert (held.value, held.context) == ("aisle", {}), scope
        made = _offers(engine, **scope)
        assert _memory(made, "seat.preference") == "aisle"
        assert "offer_window_seat" not in str(made.result.parameters)
        assert engine.replay(made.decision_id).reproduced
        slots = [r.context for r in engine.resolved_facts("u1", "travel", **scope)
                 if r.key == "seat.preference"]  # fmt: skip
        assert slots == [{}], scope
    inside = {"session_id": "s1", "turn": "t1"}
    held = engine.resolve("u1", "travel", "seat.preference", context=OFFERS, **inside)
    assert (held.value, held.context) == ("window", OFFERS)
    assert "offer_window_seat" in str(_offers(engine, **inside).result.parameters)
    # without a turn named, the session's latest instruction is this turn's
    held = engine.resolve("u1", "travel", "seat.preference", context=OFFERS, session_id="s1")
    assert (held.value, held.context) == ("window", OFFERS)


def test_two_sources_contradicting_in_one_turn_stay_in_conflict_after_it(
    engine: Engine,
) -> None:
    """Each turn instruction leaves a session note, and a later turn's note replaces the
    earlier ones; but the two notes one turn left from two sources conflict, as their
    instructions did, in every later turn: not the one written last by arrival."""
    outcomes = set()
    for n, order in enumerate((("dialogue", "behavior"), ("behavior", "dialogue"))):
        user = f"u{n}"
        for source in order:
            engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                           "value": "window" if source == "dialogue" else "aisle",
                           "source": source, "confidence": 0.95 if source == "dialogue" else 0.8,
                           "scope": "turn", "session_id": "s1",
                           "provenance": {"source_ref": "t1"}})  # fmt: skip
        notes = [f for f in engine.facts(user) if f.scope.value == "session"]
        assert sorted(f.source.value for f in notes) == ["behavior", "dialogue"]
        for turn in ("t1", "t2"):
            made = engine.decide(user, "travel", OFFERS, decision="offers", session_id="s1",
                                 turn=turn)  # fmt: skip
            assert made.result.status.value == "needs_review", (order, turn, made.result)
            held = engine.resolve(user, "travel", "seat.preference", session_id="s1", turn=turn)
            outcomes.add((turn, held.outcome.value, str(held.value)))
        # a later turn's instruction replaces both notes, as any later note does
        engine.ingest({"user_id": user, "domain": "travel", "key": "seat.preference",
                       "value": "window", "source": "dialogue", "confidence": 0.9,
                       "scope": "turn", "session_id": "s1", "provenance": {"source_ref": "t3"}})
        made = engine.decide(user, "travel", OFFERS, decision="offers", session_id="s1", turn="t4")
        assert made.result.status.value == "decided", made.result
        assert _memory(made, "seat.preference") == "window"
    # the arrival order changes nothing
    assert len(outcomes) == 2, outcomes


def test_confirming_one_of_two_sources_of_a_turn_keeps_the_other_note(engine: Engine) -> None:
    """A turn instruction awaiting confirmation ends the session's older notes once confirmed,
    as when written: not another source's note of the same turn."""
    turn = {"key": "location.city", "scope": "turn", "session_id": "s1",
            "provenance": {"source_ref": "t1"}}  # fmt: skip
    engine.ingest({"user_id": "u1", "domain": "travel", "value": "city:beijing",
                   "source": "system", "confidence": 0.9, **turn})  # fmt: skip
    engine.ingest({"user_id": "u1", "domain": "travel", "value": "city:chengdu",
                   "source": "dialogue", "confidence": 0.9, **turn})  # fmt: skip
    for fact in engine.history("u1", "location.city", "travel"):
        if fact.scope.value == "turn" and fact.status.value == "pending_confirmation":
            engine.confirm("u1", fact.id)
    notes = {(f.source.value, f.status.value) for f in engine.history("u1", "location.city",
             "travel") if f.scope.value == "session"}  # fmt: skip
    assert notes == {("system", "active"), ("dialogue", "active")}
