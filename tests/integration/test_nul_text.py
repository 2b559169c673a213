"""U+0000 in any text that reaches storage is refused the same way on SQLite and PostgreSQL.

PostgreSQL's ``text`` and ``jsonb`` cannot hold NUL, so an unchecked NUL failed there as a raw
``store.error`` while SQLite kept it: the refusal is a validation problem (``text.nul``) with
a path, before any store is touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock, MemkgError, ValidationFailed
from memkg.model.fact import Observation
from support.observations import obs

NUL = "a\x00b"

STORES = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=STORES)
def store_engine(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock
) -> Iterator[Engine]:
    if request.param == "sqlite":
        with Engine.open(tmp_path / "memkg.db", clock=clock) as engine:
            yield engine
        return
    dsn = request.getfixturevalue("postgres_dsn")
    schema = request.getfixturevalue("pg_schema")
    with Engine.connect(dsn, schema=schema, clock=clock) as engine:
        yield engine


OBSERVATIONS: dict[str, tuple[dict[str, Any], str]] = {
    "value": (obs(key="seat.preference", value=NUL), "$.value"),
    "value in a list": (obs(key="airline.avoided", value=["airline:CA", NUL]), "$.value[1]"),
    "source_ref": (obs(provenance={"source_ref": NUL}), "$.provenance.source_ref"),
    "audit_log_id": (obs(provenance={"audit_log_id": NUL}), "$.provenance.audit_log_id"),
    "purpose": (obs(provenance={"purpose": NUL}), "$.provenance.purpose"),
    "consent_version": (obs(provenance={"consent_version": NUL}), "$.provenance.consent_version"),
    "context value": (obs(context={"trip_type": NUL}), "$.context.trip_type"),
    "idempotency_key": (obs(idempotency_key=NUL), "$.idempotency_key"),
}


@pytest.mark.parametrize("name", list(OBSERVATIONS))
def test_an_observation_holding_nul_is_refused_with_a_path(store_engine: Engine, name: str) -> None:
    observation, path = OBSERVATIONS[name]
    head = store_engine.store.head()
    with pytest.raises(ValidationFailed) as refused:
        store_engine.ingest(observation)
    found = [(p.code, p.path) for p in refused.value.report.problems]
    assert ("text.nul", path) in found
    assert all(code != "store.error" for code, _ in found)
    assert store_engine.store.head() == head  # nothing stored


def test_a_built_observation_is_checked_too(store_engine: Engine) -> None:
    built = Observation.model_validate(obs(provenance={"source_ref": NUL}))
    with pytest.raises(ValidationFailed) as refused:
        store_engine.ingest(built)
    assert refused.value.report.codes == ["text.nul"]


def _arguments(engine: Engine) -> dict[str, Callable[[], object]]:
    fact = engine.ingest(obs(value="airline:CA")).fact_id
    assert fact is not None
    return {
        "decision context": lambda: engine.decide("u1", "travel", {"airline": NUL}),
        "decision context key": lambda: engine.decide("u1", "travel", {NUL: "x"}),
        "retract reason": lambda: engine.retract("u1", fact, NUL),
        "merge reason": lambda: engine.merge_users("u1", "u2", by="x", reason=NUL),
        "memory off reason": lambda: engine.disable_memory("u1", by="x", reason=NUL),
        "erase_audit_id": lambda: engine.erase_audit_id(NUL),
    }


@pytest.mark.parametrize(
    "name",
    ["decision context", "decision context key", "retract reason", "merge reason",
     "memory off reason", "erase_audit_id"],
)  # fmt: skip
def test_an_argument_holding_nul_is_refused(store_engine: Engine, name: str) -> None:
    call = _arguments(store_engine)[name]
    head = store_engine.store.head()
    decisions = len(store_engine.decisions("u1"))
    with pytest.raises(MemkgError) as refused:
        call()
    assert refused.value.code == "text.nul"
    assert "NUL" in refused.value.message
    assert store_engine.store.head() == head
    assert len(store_engine.decisions("u1")) == decisions


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/v1/decisions/dec%00x"), ("post", "/v1/decisions/dec%00x/replay")],
)
def test_a_decision_id_with_a_nul_is_refused_alike_on_every_store(
    store_engine: Engine, method: str, path: str
) -> None:
    """The decision routes read the log directly: PostgreSQL refused the id (``text.nul``),
    SQLite answered that no such decision exists."""
    from support.service import client, keyed_app, token

    app, keyring = keyed_app(store_engine)
    answered = getattr(client(app, token(keyring)), method)(path)
    assert (answered.status_code, answered.json()["error"]) == (400, "text.nul")
