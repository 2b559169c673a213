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
