"""A whole number sent as ``2.0`` or ``1e1`` to a key whose schema declares an integer passes
(JSON Schema counts it one) and is stored, served and shown as the integer it is."""

from __future__ import annotations

import pytest

from memkg import Engine, ValidationFailed
from support.observations import CONSENTED, obs


def test_a_whole_float_of_an_integer_key_is_stored_as_an_integer(engine: Engine) -> None:
    engine.ingest(obs(key="travel.companions", value=1e1))
    engine.ingest(obs(domain="health", key="bp.reading", source="behavior", confidence=0.9,
                      value={"systolic": 120.0, "diastolic": 8e1}, **CONSENTED))  # fmt: skip
    held = {f.key: f.value for f in engine.facts("u1")}
    assert held["travel.companions"] == 10 and type(held["travel.companions"]) is int
    reading = held["bp.reading"]
    assert reading == {"systolic": 120, "diastolic": 80}
    assert all(type(v) is int for v in reading.values())
    # the log holds the integer too: a new process reads what this one serves
    [event] = [e for e in engine.read_events("u1") if e.payload.get("fact", {}).get("key")
               == "travel.companions"]  # fmt: skip
    assert type(event.payload["fact"]["value"]) is int
    profile = engine.render_profile("u1", "travel").text
    assert "travel.companions = 10 " in profile and "10.0" not in profile


def test_a_negative_zero_and_a_fraction_are_what_they_are(engine: Engine) -> None:
    engine.ingest(obs(key="travel.companions", value=-0.0))
    [fact] = [f for f in engine.facts("u1") if f.key == "travel.companions"]
    assert fact.value == 0 and type(fact.value) is int
    with pytest.raises(ValidationFailed):  # not a whole number: refused, as before
        engine.ingest(obs(key="travel.companions", value=2.5))


def test_a_whole_float_past_64_bits_stays_a_float() -> None:
    """An integer past 64 bits is refused as sent (``value.int_range``); as a float it passes
    a schema with no maximum, and stays the float it came as rather than an int no store or
    rule compares."""
    from memkg.validate.integers import as_declared

    integer = {"type": "integer"}
    assert as_declared(1e300, integer) == 1e300 and type(as_declared(1e300, integer)) is float
    assert type(as_declared(2.0**63, integer)) is float
    assert as_declared(-(2.0**63), integer) == -(2**63)
    assert type(as_declared(9.0e18, integer)) is int
