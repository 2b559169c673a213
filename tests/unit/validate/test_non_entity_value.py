"""A value that is no entity reference, on a key that names entities, is refused with a report.

It used to reach the SHACL stage anyway and crash building the fact's graph, whether the
schema had refused it ("MU") or let it through ("airline:.x" is no entity name).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rdflib import Graph

from memkg import Engine, ValidationFailed
from memkg.validate.shacl import Candidate, ShaclChecker
from support.observations import obs

NOT_ENTITIES = ["MU", "airline:", "airline:MU extra"]


@pytest.mark.parametrize("value", NOT_ENTITIES)
def test_validate_reports_a_schema_pattern_problem(engine: Engine, value: str) -> None:
    report = engine.validate(obs(value=value))
    assert report.codes == ["schema.pattern"]


@pytest.mark.parametrize("value", NOT_ENTITIES)
def test_ingest_refuses_with_the_report(sqlite_engine: Engine, value: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        sqlite_engine.ingest(obs(value=value))
    assert refused.value.report.codes == ["schema.pattern"]
    assert sqlite_engine.store.head() == 0


@pytest.mark.parametrize("value", ["airline:" + "A" * 65, "airline:.x", "airline:-"])
def test_a_value_the_schema_allows_but_no_entity_is_a_problem(engine: Engine, value: str) -> None:
    report = engine.validate(obs(value=value))
    assert report.codes == ["shacl.entity_reference"]
    with pytest.raises(ValidationFailed):
        engine.ingest(obs(value=value))


def test_one_bad_row_does_not_sink_the_batch(sqlite_engine: Engine) -> None:
    rows = [obs(), obs(value="MU"), obs(value="airline:.x"), obs(user_id="u2")]
    outcomes = sqlite_engine.ingest_many(rows)
    assert [o.accepted for o in outcomes] == [True, False, False, True]
    reports = [o.report for o in outcomes[1:3]]
    assert [r.codes for r in reports if r is not None] == [
        ["schema.pattern"],
        ["shacl.entity_reference"],
    ]
    assert [f.value for f in sqlite_engine.facts("u1")] == ["airline:MU"]
    assert [f.value for f in sqlite_engine.facts("u2")] == ["airline:MU"]


def _candidate(*entities: str) -> Candidate:
    return Candidate(
        user_id="u1",
        key="airline.preferred",
        kind="preference",
        source="dialogue",
        confidence=0.9,
        sensitivity="public",
        observed_at=datetime(2026, 5, 1, tzinfo=UTC),
        valid_until=None,
        consent_granted=False,
        entities=entities,
    )


def test_the_shacl_stage_turns_a_bad_reference_into_a_problem() -> None:
    checker = ShaclChecker(Graph(), {})
    bad, good, worse = checker.check(
        [_candidate("MU"), _candidate("airline:MU"), _candidate("airline:MU", "city:")]
    )
    assert [p.code for p in bad] == ["shacl.entity_reference"]
    assert good == []
    assert [p.code for p in worse] == ["shacl.entity_reference"]
    assert "entity 2 of 2" in worse[0].message
