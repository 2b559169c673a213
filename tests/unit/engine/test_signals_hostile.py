"""Signals given hostile or unusual input: each is refused with a code saying what to fix, in
a message of bounded length, and nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.errors import InvalidOperation, MemkgError
from support.observations import T0, obs


@pytest.fixture
def engine() -> Engine:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    engine.ingest(obs(key="seat.preference", value="aisle"))
    engine.ingest(obs(key="airline.avoided", value=["airline:MU"]))
    return engine


DEEP: list[Any] = ["deep"]
for _ in range(40):
    DEEP = [DEEP]
UNHOLDABLE = {"object": object(), "set": {1, 2}, "bytes": b"aisle", "nan": float("nan"),
              "inf": float("inf"), "huge-int": 2**70, "2M-chars": "x" * 2_000_000,
              "deep": DEEP, "nested": {"a": object()}}  # fmt: skip


@pytest.mark.parametrize("value", list(UNHOLDABLE.values()), ids=list(UNHOLDABLE))
def test_a_value_no_fact_could_hold_is_refused_as_a_signal_value(
    engine: Engine, value: Any
) -> None:
    version = engine.store.stream_version("u1")
    with pytest.raises(InvalidOperation) as caught:
        engine.signal("u1", "travel", "seat.preference", value, "mention")
    assert caught.value.code == "signal.value"
    assert "seat.preference" in caught.value.message and len(caught.value.message) < 600
    assert engine.store.stream_version("u1") == version


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        ("k" * 1_000_000, "aisle", "mention"),
        ("seat.preference", "z" * 50_000, "mention"),
        ("seat.preference", "aisle", "m" * 1_000_000),
    ],
    ids=["long-key", "long-value", "long-kind"],
)
def test_a_refusal_does_not_echo_a_huge_argument(
    engine: Engine, key: str, value: str, kind: str
) -> None:
    with pytest.raises(InvalidOperation) as caught:
        engine.signal("u1", "travel", key, value, kind)
    assert caught.value.code in {"signal.no_edge", "signal.kind", "signal.value"}
    assert len(caught.value.message) < 600


@pytest.mark.parametrize("session", ["s" * 129, "a b", "s1\n", "", "-s", "s>1", 'x"y', "é"])
def test_a_session_id_is_an_identifier_as_on_a_fact(engine: Engine, session: str) -> None:
    version = engine.store.stream_version("u1")
    with pytest.raises(InvalidOperation) as caught:
        engine.signal("u1", "travel", "seat.preference", "aisle", "mention", session_id=session)
    assert caught.value.code == "signal.session_id"
    assert "session_id" in caught.value.message and len(caught.value.message) < 600
    assert engine.store.stream_version("u1") == version
    with pytest.raises(MemkgError):  # a fact refuses the same session id
        engine.ingest(obs(key="seat.preference", value="aisle", scope="session",
                          session_id=session))  # fmt: skip
    event = engine.signal("u1", "travel", "seat.preference", "aisle", "mention",
                          session_id="s-1.b:2@x")  # fmt: skip
    assert event.payload["session_id"] == "s-1.b:2@x"


def test_a_flood_of_signals_keeps_the_weight_in_its_range(engine: Engine) -> None:
    for _ in range(200):
        engine.signal("u1", "travel", "seat.preference", "aisle", "mention")
    [edge] = engine.edges("u1", "travel", "seat.preference")
    assert edge.weight == 1.0
    for _ in range(1_100):  # each halves it: past the smallest float it stays 0
        engine.signal("u1", "travel", "airline.avoided", "airline:MU", "rejected")
    [edge] = engine.edges("u1", "travel", "airline.avoided")
    assert edge.weight == 0.0 and not edge.usable


@pytest.mark.parametrize("missing", ["key", "domain"])
def test_a_signal_names_its_key_and_domain(engine: Engine, missing: str) -> None:
    arguments: dict[str, Any] = {"domain": "travel", "key": "seat.preference", missing: None}
    with pytest.raises(InvalidOperation) as caught:
        engine.signal("u1", arguments["domain"], arguments["key"], "aisle", "mention")
    assert caught.value.code == "argument.type" and missing in caught.value.message
