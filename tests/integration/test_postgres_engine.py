"""Several engine processes share one memory through PostgreSQL: facts and decisions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memkg import Engine, FrozenClock
from memkg.decisions.postgres import PostgresDecisionLog
from support.observations import CONSENTED, obs

pytestmark = pytest.mark.postgres


def test_two_engines_share_facts_and_decisions(postgres_dsn: str, pg_schema: str) -> None:
    clock = FrozenClock(datetime(2026, 5, 1, 22, 15, tzinfo=UTC))
    with (
        Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as writer,
        Engine.connect(postgres_dsn, schema=pg_schema, clock=clock) as reader,
    ):
        assert isinstance(writer.decision_log, PostgresDecisionLog)
        age = writer.ingest(obs(domain="health", key="child.age", value=3, source="profile",
                                **CONSENTED))  # fmt: skip
        assert [f.id for f in reader.facts("u1", "health")] == [age.fact_id]

        decision = writer.decide("u1", "health", {"symptom": "fever"})
        assert [d.decision_id for d in reader.decisions("u1")] == [decision.decision_id]
        assert reader.replay(decision.decision_id).reproduced

        receipt = reader.erase("u1")
        assert receipt.removed["decisions"] == 1
        assert writer.facts("u1") == [] and writer.decisions("u1") == []
