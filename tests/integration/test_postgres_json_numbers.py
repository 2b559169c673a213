"""Numbers kept in PostgreSQL's JSONB read back as the numbers written, in every process.

JSONB keeps a number as ``numeric``, which forgets its exponent: ``1.5e+300`` came back as a
301-digit integer and ``2e+20`` as an integer past 64 bits. A decision whose context held such
a float was logged by one process and read back by another (or by itself) with an int of
another value in its place, so its explanation quoted another number and it no longer
replayed; SQLite keeps the JSON text and replays it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memkg import Engine, FrozenClock
from memkg.postgres import jsonb_exact
from support.observations import obs
from support.pg_process import EngineProcess

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)


@pytest.fixture
def shopper(postgres_dsn: str, pg_schema: str) -> Iterator[Engine]:
    """An engine on a fresh schema holding a shopper interested in phones, budget 5,000."""
    with Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(NOW)) as engine:
        engine.ingest(obs(domain="commerce", key="category.interest", value=["category:phone"]))
        engine.ingest(obs(domain="commerce", key="budget.range",
                          value={"max": 5000, "currency": "EUR"}))  # fmt: skip
        yield engine


@pytest.mark.parametrize("price", [1.5e300, 2e20, 1e16, 123456.5, 1e-7])
def test_a_logged_context_number_is_the_same_float_in_another_process(
    shopper: Engine, postgres_dsn: str, pg_schema: str, price: float
) -> None:
    made = shopper.decide("u1", "commerce", {"category": "category:phone", "price": price})
    assert made.result.action == "suggest_cheaper_alternative" or price < 5000
    assert shopper.decision_log.get(made.decision_id) == made
    assert shopper.replay(made.decision_id).reproduced
    with EngineProcess(postgres_dsn, pg_schema, NOW.isoformat()) as other:
        logged = other.call("logged", decision_id=made.decision_id)["ok"]
        assert logged["price"] == ["float", repr(price)]
        assert other.call("replay", decision_id=made.decision_id)["ok"] == {
            "reproduced": True, "differences": []}  # fmt: skip


def test_a_stored_fact_number_is_the_same_float_in_another_process(
    postgres_dsn: str, pg_schema: str
) -> None:
    with (
        Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(NOW)) as writer,
        EngineProcess(postgres_dsn, pg_schema, NOW.isoformat()) as other,
    ):
        writer.ingest(obs(domain="commerce", key="category.interest", value=["category:phone"]))
        writer.ingest(obs(domain="commerce", key="budget.range",
                          value={"max": 2e20, "currency": "EUR"}))  # fmt: skip
        facts = dict(other.call("facts", user="u1")["ok"])
        assert facts["budget.range"]["max"] == ["float", repr(2e20)]
        made = other.call("decide", user="u1", domain="commerce",
                          context={"category": "category:phone", "price": 100})  # fmt: skip
        assert made["ok"]["action"] == "recommend_product"
        assert other.call("replay", decision_id=made["ok"]["decision_id"])["ok"]["reproduced"]


def test_a_negative_zero_in_the_context_replays_in_another_process(
    shopper: Engine, postgres_dsn: str, pg_schema: str
) -> None:
    made = shopper.decide("u1", "commerce", {"category": "category:phone", "price": -0.0})
    with EngineProcess(postgres_dsn, pg_schema, NOW.isoformat()) as other:
        replayed = other.call("replay", decision_id=made.decision_id)["ok"]
        assert replayed["reproduced"], replayed["differences"]


def test_a_negative_zero_in_a_fact_value_replays_in_another_process(
    postgres_dsn: str, pg_schema: str
) -> None:
    """A value is stored as ingest saw it; jsonb keeps no -0.0, so ingest writes 0.0."""
    with Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(NOW)) as writer:
        writer.ingest(obs(domain="commerce", key="category.interest", value=["category:phone"]))
        writer.ingest(obs(domain="commerce", key="budget.range",
                          value={"max": -0.0, "currency": "EUR"}))  # fmt: skip
        [held] = [f for f in writer.facts("u1") if f.key == "budget.range"]
        assert str(held.value["max"]) == "0.0"
        made = writer.decide("u1", "commerce", {"category": "category:phone", "price": 100})
        with EngineProcess(postgres_dsn, pg_schema, NOW.isoformat()) as other:
            replayed = other.call("replay", decision_id=made.decision_id)["ok"]
            assert replayed["reproduced"], replayed["differences"]


TEXT = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=8)
"""What PostgreSQL can hold at all (no NUL, no lone surrogate), as every store refuses them."""
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | TEXT
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0"),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@given(value=JSON)
def test_jsonb_gives_back_every_value_spelled_by_jsonb_exact(postgres_dsn: str, value: Any) -> None:
    text = jsonb_exact(json.dumps(value, ensure_ascii=False))
    with psycopg.connect(postgres_dsn) as db:
        row = db.execute("SELECT %s::jsonb::text", (text,)).fetchone()
    assert row is not None
    assert _typed(json.loads(row[0])) == _typed(value)
