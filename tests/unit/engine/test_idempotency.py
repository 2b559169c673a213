"""Idempotency keys: a retry is stored once, a reused key with another body is refused, and
erasure by audit id takes the key with the fact."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, ValidationFailed
from support.observations import T0, obs


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    clock = FrozenClock(T0)
    if request.param == "memory":
        yield Engine(clock=clock)
    elif request.param == "sqlite":
        with Engine.open(tmp_path / "m.db", clock=clock) as engine:
            yield engine
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        schema = request.getfixturevalue("pg_schema")
        with Engine.connect(dsn, schema=schema, clock=clock) as engine:
            yield engine


def test_a_retry_with_the_same_body_is_a_duplicate(any_engine: Engine) -> None:
    first = any_engine.ingest(obs(idempotency_key="k1"))
    again = any_engine.ingest(obs(idempotency_key="k1"))
    assert again.duplicate and again.fact_id == first.fact_id


def test_a_reused_key_with_another_body_is_refused(any_engine: Engine) -> None:
    any_engine.ingest(obs(idempotency_key="k1"))
    head = any_engine.store.head()
    with pytest.raises(ValidationFailed) as refused:
        any_engine.ingest(obs(value="airline:CA", idempotency_key="k1"))
    assert refused.value.report.codes == ["idempotency.mismatch"]
    assert refused.value.report.problems[0].path == "$.idempotency_key"
    assert any_engine.store.head() == head
    [outcome] = any_engine.ingest_many([obs(confidence=0.5, idempotency_key="k1")])
    assert not outcome.accepted and outcome.report is not None
    assert outcome.report.codes == ["idempotency.mismatch"]


def test_erasure_by_audit_id_removes_the_key_and_a_retry_stores_anew(
    any_engine: Engine, tmp_path: Path
) -> None:
    audited = obs(idempotency_key="secret-key-text", provenance={"audit_log_id": "aud1"})
    first = any_engine.ingest(audited)
    any_engine.ingest(obs(key="seat.preference", value="aisle", idempotency_key="other"))
    [receipt] = any_engine.erase_audit_id("aud1")
    assert receipt.removed["idempotency_keys"] == 1
    for path in tmp_path.iterdir():
        assert b"secret-key-text" not in path.read_bytes(), path.name
    again = any_engine.ingest(audited)
    assert not again.duplicate and again.fact_id != first.fact_id
    assert [f.value for f in any_engine.facts("u1") if f.key == "airline.preferred"] == [
        "airline:MU"
    ]
    assert any_engine.ingest(
        obs(key="seat.preference", value="aisle", idempotency_key="other")
    ).duplicate
