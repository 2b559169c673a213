"""An observation's flags, confidence and timestamps are taken only in their JSON types.

A string or a number is not consent ("y", "1", 1), a flag is not a confidence (``true``),
and a bare number is not a timestamp (seconds or milliseconds since 1970, in no stated time
zone): each is refused at its field with a message saying what to send, and nothing is stored.
The values an observation may carry are stored exactly as given.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from memkg import Engine, ValidationFailed
from support.observations import CONSENTED, T0, obs

CONDITION = {"domain": "health", "key": "medical.conditions", "value": ["condition:asthma"],
             "source": "profile"}  # fmt: skip


def _refused(engine: Engine, observation: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest(observation)
    assert engine.store.head() == 0  # nothing stored
    return [(p.code, p.path, p.message) for p in refused.value.report.problems]


@pytest.mark.parametrize("granted", ["y", "t", "yes", "true", "on", "1", 1, 1.0])
def test_consent_is_granted_only_by_the_boolean_true(engine: Engine, granted: Any) -> None:
    problems = _refused(engine, obs(**CONDITION, provenance={"consent_granted": granted}))
    assert [(code, path) for code, path, _ in problems] == [
        ("envelope.type", "$.provenance.consent_granted"),
        ("policy.consent_missing", "$.provenance.consent_granted"),  # no consent was given
    ]
    assert "true or false" in problems[0][2]


@pytest.mark.parametrize("change", ["yes", "true", 1, 0, "false"])
def test_change_is_a_boolean(engine: Engine, change: Any) -> None:
    problems = _refused(engine, obs(change=change))
    assert [(code, path) for code, path, _ in problems] == [("envelope.type", "$.change")]


@pytest.mark.parametrize("confidence", [True, False, "0.5", " 0.5 ", "1e-1"])
def test_confidence_is_a_number(engine: Engine, confidence: Any) -> None:
    problems = _refused(engine, obs(confidence=confidence))
    assert [(code, path) for code, path, _ in problems] == [("envelope.type", "$.confidence")]
    assert "number" in problems[0][2]


@pytest.mark.parametrize("field", ["observed_at", "valid_until"])
@pytest.mark.parametrize("stamp", [0, 1_700_000_000, 1.7e9, "1700000000", "1700000000000"])
def test_a_bare_number_is_not_a_timestamp(engine: Engine, field: str, stamp: Any) -> None:
    problems = _refused(engine, obs(**{field: stamp}))
    assert [(code, path) for code, path, _ in problems] == [("envelope.type", f"$.{field}")]
    assert "ISO 8601" in problems[0][2] and "2026-05-01T09:00:00Z" in problems[0][2]


def test_what_the_envelope_may_hold_is_stored_as_given(engine: Engine) -> None:
    given = {
        **obs(**CONDITION, **CONSENTED, confidence=1, change=True),
        "observed_at": "2026-05-01T08:00:00+08:00",
        "valid_until": datetime(2027, 1, 1, tzinfo=UTC),
    }
    fact = engine.fact("u1", engine.ingest(given).fact_id)
    assert fact.provenance.consent_granted is True and fact.change is True
    assert fact.confidence == 1.0 and type(fact.confidence) is float
    assert fact.observed_at == T0 - timedelta(hours=9)
    assert fact.observed_at.utcoffset() == timedelta(hours=8)
    assert fact.valid_until == datetime(2027, 1, 1, tzinfo=UTC)
    refused = obs(key="seat.preference", value="aisle", confidence=0.0, change=False,
                  provenance={"consent_granted": False})  # fmt: skip
    assert engine.fact("u1", engine.ingest(refused).fact_id).confidence == 0.0


@pytest.mark.parametrize(
    ("observed_at", "valid_until"),
    [
        ("2026-05-01T08:00:00Z", "2026-05-01T07:59:59Z"),
        ("2026-05-01T08:00:00Z", "2026-05-01T16:00:00+08:00"),  # the same instant
        (None, "0001-01-01T00:00:00Z"),  # before the engine's clock, the observation's time
        ("2026-05-01T08:00:00Z", "0001-01-01T00:00:00+14:00"),
    ],
)
def test_a_fact_cannot_expire_before_it_was_observed(
    engine: Engine, observed_at: str | None, valid_until: str
) -> None:
    given = obs(key="location.current_city", value="city:shanghai", valid_until=valid_until)
    if observed_at is not None:
        given["observed_at"] = observed_at
    problems = _refused(engine, given)
    assert [(code, path) for code, path, _ in problems] == [("envelope.range", "$.valid_until")]
    assert "after observed_at" in problems[0][2]


def test_validity_may_end_at_the_edge_of_the_calendar(engine: Engine) -> None:
    for until in ("9999-12-31T23:59:59-12:00", "2026-05-01T08:00:01Z"):
        given = obs(key="location.current_city", value="city:shanghai", valid_until=until,
                    observed_at="2026-05-01T08:00:00Z")  # fmt: skip
        assert engine.fact("u1", engine.ingest(given).fact_id).valid_until.isoformat() == (
            until.replace("Z", "+00:00")
        )


@pytest.mark.parametrize("confidence", [Decimal("0.85"), Fraction(17, 20)])
def test_a_confidence_read_from_a_database_is_a_number(engine: Engine, confidence: Any) -> None:
    """psycopg and SQLAlchemy give NUMERIC columns as ``Decimal``: a number like any other."""
    fact = engine.fact("u1", engine.ingest(obs(confidence=confidence)).fact_id)
    assert fact.confidence == 0.85 and type(fact.confidence) is float
