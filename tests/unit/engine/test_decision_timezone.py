"""The user's time zone, which a decision's local time comes from, is a key like any other:
its arbitrated value in the decision's scope (turn > session > long term) is used, a frozen
time zone makes a decision that reads the local time wait, and the fact used is cited."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision

NOW = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)
"""22:15 in Asia/Shanghai (the triage night rule), 10:15 in America/New_York (the day rule)."""
NIGHT, DAY = "book_emergency_appointment", "book_same_day_appointment"
CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "care"}


@pytest.fixture
def engine() -> Engine:
    made = Engine(clock=FrozenClock(NOW))
    _write(made, "child.age", 3)
    _write(made, "medical.conditions", ["condition:asthma"])
    return made


def _write(
    engine: Engine, key: str, value: Any, source: str = "profile", confidence: float = 1.0,
    **fields: Any,
) -> str:  # fmt: skip
    made = engine.ingest({"user_id": "u", "domain": "health", "key": key, "value": value,
                          "source": source, "confidence": confidence, "provenance": CONSENT,
                          **fields})  # fmt: skip
    assert made.fact_id is not None
    return made.fact_id


def _triage(engine: Engine, **scope: str) -> Decision:
    made = engine.decide("u", "health", {"symptom": "fever"}, **scope)
    assert engine.replay(made.decision_id).reproduced
    return made


def _zone(made: Decision) -> list[Any]:
    return [m for m in made.explanation.memory if m.key == "timezone"]


def test_a_session_time_zone_counts_only_in_its_session(engine: Engine) -> None:
    home = _write(engine, "timezone", "Asia/Shanghai")
    away = _write(engine, "timezone", "America/New_York", source="system", scope="session",
                  session_id="s1")  # fmt: skip

    for scope in ({}, {"session_id": "s2"}):
        made = _triage(engine, **scope)
        assert (made.explanation.timezone, made.result.action) == ("Asia/Shanghai", NIGHT)
        assert home in (made.read or ()) and away not in (made.read or ())
        [node] = _zone(made)
        assert node.value == "Asia/Shanghai"
        assert {c.fact_id: c.standing for c in node.claims} == {home: "won"}
        # another session's claim counts only there: not listed as left out here either
        assert not [lo for lo in made.left_out if lo.key == "timezone"]

    inside = _triage(engine, session_id="s1")
    assert (inside.explanation.timezone, inside.result.action) == ("America/New_York", DAY)
    assert away in (inside.read or ())
    [node] = _zone(inside)
    assert node.value == "America/New_York"
    assert {c.fact_id: c.standing for c in node.claims}[away] == "won"


@pytest.mark.parametrize("strong_first", [True, False])
def test_a_time_zone_that_lost_arbitration_is_not_used(engine: Engine, strong_first: bool) -> None:
    writes = [("Asia/Shanghai", "profile", 1.0), ("America/New_York", "system", 0.05)]
    ids = [_write(engine, "timezone", v, s, c) for v, s, c in
           (writes if strong_first else writes[::-1])]  # fmt: skip
    weak = ids[1] if strong_first else ids[0]
    assert engine.resolve("u", "health", "timezone").value == "Asia/Shanghai"

    made = _triage(engine)
    assert (made.explanation.timezone, made.result.action) == ("Asia/Shanghai", NIGHT)
    assert weak not in (made.read or ()) and ids[ids.index(weak) - 1] in (made.read or ())
    assert {lo.ref: lo.reason for lo in made.left_out if lo.key == "timezone"} == {
        weak: "lost_arbitration"
    }
    [node] = _zone(made)
    assert node.value == "Asia/Shanghai"


def test_a_frozen_time_zone_holds_back_a_decision_that_reads_the_local_time(
    engine: Engine,
) -> None:
    _write(engine, "timezone", "Asia/Shanghai", "profile", 1.0)
    _write(engine, "timezone", "America/New_York", "system", 0.9)
    assert engine.resolve("u", "health", "timezone").outcome.value == "frozen"

    made = _triage(engine)
    assert made.result.status.value == "needs_review"
    assert made.explanation.timezone == "UTC"  # no claim of a frozen key is used
    assert {lo.reason for lo in made.left_out if lo.key == "timezone"} == {"frozen"}
    assert any("timezone is frozen" in p for p in made.problems)
    [node] = _zone(made)
    assert node.outcome == "frozen"

    # a decision whose rules never read the local time does not wait for it
    asked = {"allergen": "allergen:penicillin", "drug_class": "antibiotic"}
    other = engine.decide("u", "health", asked, decision="medication")
    assert other.result.status.value == "decided"
    assert not any(lo.key == "timezone" for lo in other.left_out)


def test_a_time_zone_in_the_request_is_the_one_used(engine: Engine) -> None:
    tz = _write(engine, "timezone", "America/New_York")
    made = engine.decide("u", "health", {"symptom": "fever", "timezone": "Asia/Shanghai"})
    assert (made.explanation.timezone, made.result.action) == ("Asia/Shanghai", NIGHT)
    assert tz not in (made.read or ()) and not _zone(made)


def test_the_time_zone_used_is_cited_in_every_rendering(engine: Engine) -> None:
    _write(engine, "timezone", "Asia/Shanghai")
    away = _write(engine, "timezone", "America/New_York", source="system", scope="session",
                  session_id="s1")  # fmt: skip
    made = _triage(engine, session_id="s1")
    assert away in (made.read or ())
    text = engine.explain(made.decision_id, "text")
    assert "timezone = America/New_York" in text
    assert "timezone = America/New_York" in engine.explain(made.decision_id, "md")
    memory = json.loads(engine.explain(made.decision_id, "json"))["memory"]
    [node] = [m for m in memory if m["key"] == "timezone"]
    assert away in [c["fact_id"] for c in node["claims"]]
