"""An id, a key, a domain or a reason given to the library as anything but text is refused with
``argument.type`` naming the argument (it was an ``AttributeError`` from deep inside, e.g.
``'NoneType' object has no attribute 'strip'``), and nothing stored changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memkg import Engine, InvalidOperation
from support.observations import obs

CALLS: dict[str, tuple[str, Callable[[Engine, str, Any], object]]] = {
    "erase": ("user_id", lambda e, f, bad: e.erase(bad)),
    "retract reason": ("reason", lambda e, f, bad: e.retract("mei", f, bad)),
    "retract fact": ("fact_id", lambda e, f, bad: e.retract("mei", bad, "wrong")),
    "confirm": ("fact_id", lambda e, f, bad: e.confirm("mei", bad)),
    "fact": ("fact_id", lambda e, f, bad: e.fact("mei", bad)),
    "facts": ("user_id", lambda e, f, bad: e.facts(bad)),
    "facts domain": ("domain", lambda e, f, bad: e.facts("mei", bad)),
    "history": ("key", lambda e, f, bad: e.history("mei", bad)),
    "graph domain": ("domain", lambda e, f, bad: e.graph("mei", bad)),
    "recall domain": ("domain", lambda e, f, bad: e.recall("mei", "seat", domain=bad)),
    "erase audit id": ("audit_log_id", lambda e, f, bad: e.erase_audit_id(bad)),
    "memory state": ("user_id", lambda e, f, bad: e.memory_state(bad)),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("bad", [None, 5, 1.5, True, ["mei"], {"a": 1}, b"mei"])
def test_an_argument_that_is_not_text_is_refused(engine: Engine, call: str, bad: Any) -> None:
    fact = engine.ingest(obs(user_id="mei")).fact_id
    before = engine.read_events("mei")
    name, run = CALLS[call]
    if bad is None and name in ("domain",):
        run(engine, fact, bad)  # None: every domain
        return
    with pytest.raises(InvalidOperation) as refused:
        run(engine, fact, bad)
    assert refused.value.code == "argument.type"
    assert refused.value.message.startswith(f"{name} is text")
    assert engine.read_events("mei") == before


@pytest.mark.parametrize("bad", [None, 5, "observations", {"user_id": "mei"}, b"x"])
def test_a_batch_is_a_list_of_observations(engine: Engine, bad: Any) -> None:
    with pytest.raises(InvalidOperation) as refused:
        engine.ingest_many(bad)
    assert refused.value.code == "argument.type"
    assert refused.value.message.startswith("observations is a list of observations")
    assert engine.store.head() == 0
    batch = (o for o in [obs(user_id="mei"), obs(user_id="mei", value="nope")])
    assert [o.accepted for o in engine.ingest_many(batch)] == [True, False]  # any iterable


@pytest.mark.parametrize("bad", [None, -1, 1.5, True, "3"])
def test_a_limit_is_a_whole_number(engine: Engine, bad: Any) -> None:
    with pytest.raises(InvalidOperation) as refused:
        engine.recent_entities("mei", "airline", "s1", limit=bad)
    assert refused.value.code == "argument.type"
    assert engine.recent_entities("mei", "airline", "s1", limit=0) == []


NAMED: dict[str, tuple[str, Callable[[Engine, Any], object]]] = {
    "save_memory_note note": (
        "note",
        lambda e, bad: e.save_memory_note("mei", "travel", bad, "global"),
    ),
    "consolidate session": ("session_id", lambda e, bad: e.consolidate("mei", "travel", bad)),
    "keys domain": ("domain", lambda e, bad: e.keys(bad)),
}


@pytest.mark.parametrize("call", sorted(NAMED))
@pytest.mark.parametrize("bad", [None, 5, ["x"], b"x"])
def test_a_required_text_argument_is_refused_as_such(engine: Engine, call: str, bad: Any) -> None:
    """Text every call needs (a note, the session to consolidate, the domain whose keys are
    listed) given as None or anything but text is ``argument.type``, not a Python error from
    inside (or, for a consolidation, one raised later from its handle)."""
    engine.ingest(obs(user_id="mei"))
    before = engine.read_events("mei")
    name, run = NAMED[call]
    with pytest.raises(InvalidOperation) as refused:
        run(engine, bad)
    assert refused.value.code == "argument.type"
    assert refused.value.message.startswith(f"{name} is text")
    assert engine.read_events("mei") == before


SHAPED: dict[str, tuple[str, Callable[[Engine, Any], object]]] = {
    "decide context": ("context", lambda e, bad: e.decide("mei", "travel", bad)),
    "resolve context": (
        "context",
        lambda e, bad: e.resolve("mei", "travel", "seat.preference", context=bad),
    ),
    "note call arguments": ("arguments", lambda e, bad: e.handle_note_call("mei", "travel", bad)),
    "extract dialogue": ("dialogue", lambda e, bad: e.extract("mei", "travel", bad)),
    "graph format": ("fmt", lambda e, bad: e.graph("mei", fmt=bad)),
}


@pytest.mark.parametrize("call", sorted(SHAPED))
@pytest.mark.parametrize("bad", [5, ["x"], b"x", "xml"])
def test_an_argument_of_the_wrong_shape_is_refused(engine: Engine, call: str, bad: Any) -> None:
    """A context that is no mapping, a note call's arguments that are neither JSON text nor a
    mapping, a dialogue that is no list of messages, a graph format memkg does not write:
    ``argument.type`` naming the argument, and nothing is logged."""
    name, run = SHAPED[call]
    if bad == "xml" and call == "note call arguments":
        return  # text: the model's JSON, refused as a result (``note.arguments``)
    engine.ingest(obs(user_id="mei"))
    before, decisions = engine.read_events("mei"), engine.decisions("mei")
    with pytest.raises(InvalidOperation) as refused:
        run(engine, bad)
    # a list of something else than messages: its first entry is named
    listed = call == "extract dialogue" and isinstance(bad, list)
    assert refused.value.code == ("message.invalid" if listed else "argument.type")
    assert refused.value.message.startswith(name), refused.value.message
    assert engine.read_events("mei") == before and engine.decisions("mei") == decisions


def test_a_context_that_holds_itself_is_decided_on_not_walked_forever(engine: Engine) -> None:
    """A decision's context is walked for text no store keeps: a list or dict that holds
    itself was walked forever (``decide`` never returned). It is read as any value nested too
    deep: an ``invalid_input`` decision, logged with a depth marker, that replays."""
    engine.ingest(obs(user_id="mei"))
    looped: list[Any] = []
    looped.append(looped)
    made = engine.decide("mei", "travel", {"airline": looped})
    assert made.result.status.value == "invalid_input"
    assert made.request.context == {"airline": {"depth": 33}}
    assert engine.replay(made.decision_id).reproduced
    # a NUL within the depth a value is kept to is still refused, as before
    with pytest.raises(InvalidOperation) as refused:
        engine.decide("mei", "travel", {"airline": [["a\x00"]]})
    assert refused.value.code == "text.nul"


def test_a_recall_query_past_its_bound_is_refused_as_over_http(engine: Engine) -> None:
    engine.ingest(obs(user_id="mei"))
    with pytest.raises(InvalidOperation) as refused:
        engine.recall("mei", "seat " * 401)
    assert refused.value.code == "recall.query" and "2,000" in str(refused.value)
    assert engine.recall("mei", "seat " * 399).trace_id is not None
