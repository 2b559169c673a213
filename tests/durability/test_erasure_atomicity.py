"""An erasure is one transaction: failed at any of its statements, it leaves everything of the
person (every merged id, the links and decisions of ids once linked, keys and audit, vectors)
or of the audit id (facts of every user, their reviews and citing decisions, idempotency keys,
vectors) in place, or nothing of it; a retry then finishes the job. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock, NotFound, StoreError
from memkg.access import Keyring
from memkg.access.model import AccessRecord
from memkg.access.postgres import PostgresAccessStore
from memkg.access.sqlite import SqliteAccessStore
from support.faults import StatementFaults
from support.figures import record
from support.observations import CONSENTED, T0, obs

WEB, PHONE, APP = "web-Kq3v", "tel-Hx5m", "app-Rt8w"
Snapshot = dict[str, Any]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opened(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Engine, Any, StatementFaults]]:
    """An engine and its access store, every statement they run countable by ``faults``."""
    faults = StatementFaults()
    faults.install(monkeypatch)
    clock = FrozenClock(T0)
    if request.param == "postgres":
        dsn, schema = request.getfixturevalue("postgres_dsn"), request.getfixturevalue("pg_schema")
        engine = Engine.connect(dsn, clock=clock, config=EngineConfig(pg_schema=schema))
        keys: Any = PostgresAccessStore(dsn, schema=schema)
    else:
        engine = Engine.open(tmp_path / "memkg.db", clock=clock)
        keys = SqliteAccessStore(tmp_path / "memkg.db")
    yield engine, keys, faults
    faults.disarm()
    keys.close()
    engine.close()


def _backend(engine: Engine) -> str:
    return str(engine.store.database).split(":")[0]  # type: ignore[attr-defined]


def _vectors(engine: Engine, *users: str) -> None:
    for user in users:
        vectors = engine.recalls.vector_store
        assert vectors.put(user, "test-embed", {f"d-{user}": [1.0, 0.5, 0.25]}, 0)


def _fail_each_statement(
    erase: Callable[[], object], faults: StatementFaults, state: Callable[[], Snapshot],
    gone: Callable[[Snapshot], bool],
) -> int:  # fmt: skip
    """Fail statement 1, 2, 3... of ``erase`` until it completes; after each failure the
    state must be the one before or the erased one. Returns how many failures left it whole."""
    before = state()
    assert not gone(before)
    n = 0
    while True:
        n += 1
        faults.arm(n)
        try:
            erase()
        except StoreError:
            assert faults.fired, "an erasure failed without an injected fault"
        finally:
            faults.disarm()
        after = state()
        if gone(after):
            return n - 1
        assert after == before, f"a failure at statement {n} left a partial erasure"
        assert faults.fired, "the erasure completed, yet something of it remains"


def _traces(engine: Engine, trace_ids: list[str]) -> int:
    """How many of these traces are still there."""
    found = 0
    for trace_id in trace_ids:
        with suppress(NotFound):
            found += bool(engine.trace(trace_id))
    return found


def _person(engine: Engine, keys: Any) -> list[str]:
    """WEB and PHONE are one person; APP was merged with WEB, then split. Returns the
    traces of the decisions made."""
    for user in (WEB, PHONE, APP, "bystander"):
        for index in range(2):
            engine.ingest(obs(user_id=user, domain="health", key="medication.current",
                              value=[f"{user} dose {index}"], idempotency_key=f"{user}-{index}",
                              **CONSENTED))  # fmt: skip
    merge = engine.merge_users(WEB, PHONE, by="desk", reason="one person")
    engine.merge_users(WEB, PHONE, by="desk", reason="one person", confirm=merge.merge_id)
    link = engine.merge_users(WEB, APP, by="desk", reason="same device")
    engine.merge_users(WEB, APP, by="desk", reason="same device", confirm=link.merge_id)
    traces = [engine.decide(user, "health", {}).trace_id for user in (WEB, PHONE, APP)]
    engine.split_users(WEB, APP, by="desk", reason="two people")
    traces.append(engine.decide(APP, "health", {}).trace_id)
    _vectors(engine, WEB, PHONE, APP, "bystander")
    ring = Keyring(keys, engine.clock)
    ring.create("agent", ["read"], ["health"], user_id=PHONE)
    ring.record([AccessRecord(record_id=f"acc_{u}", at=engine.clock.now(), key_id="k",
                              action="read", status=200, subject=u, domain="health")
                 for u in (WEB, PHONE, "bystander")])  # fmt: skip
    return [t for t in traces if t]


def _person_state(engine: Engine, keys: Any, traces: list[str]) -> Snapshot:
    store, log, issued = engine.store, engine.decision_log, keys.keys()
    links = {m.merge_id for m in engine.merges(WEB)} | {m.merge_id for m in engine.merges(APP)}
    return {
        "events": {u: len(store.read_stream(u)) for u in (WEB, PHONE, APP, "bystander")},
        "links": sum(e.fact_id in links for e in store.read_stream(APP)),
        "decisions": {u: len(log.for_user(u)) for u in (WEB, PHONE, APP, "bystander")},
        "naming": sum(bool(d.merged_ids) for d in log.for_user(APP)),
        "vectors": {u: engine.recalls.vector_store.count(u) for u in (WEB, PHONE, APP)},
        "audit": sorted(r.subject for r in keys.records() if r.subject in (WEB, PHONE)),
        "keys": sum(k.user_id in (WEB, PHONE) for k in issued),
        "erased": [store.was_erased(u) for u in (WEB, PHONE)],  # type: ignore[attr-defined]
        "traces": _traces(engine, traces),
    }


def _person_gone(state: Snapshot) -> bool:
    return (
        state["events"][WEB] == state["events"][PHONE] == 0
        and state["decisions"][WEB] == state["decisions"][PHONE] == 0
        and state["links"] == state["naming"] == 0
        and not any(state["vectors"].values())
        and state["audit"] == [] and state["keys"] == 0
        and state["erased"] == [True, True] and state["traces"] == 0
    )  # fmt: skip


def test_a_person_erasure_failed_at_any_statement_is_all_or_nothing(
    opened: tuple[Engine, Any, StatementFaults],
) -> None:
    engine, keys, faults = opened
    traces = _person(engine, keys)
    before = _person_state(engine, keys, traces)
    assert before["links"] >= 2 and before["naming"] == 1 and before["decisions"][APP] == 2
    assert before["traces"] == 4

    whole = _fail_each_statement(
        lambda: engine.erase(PHONE, also=(keys,)), faults,
        lambda: _person_state(engine, keys, traces), _person_gone,
    )  # fmt: skip

    after = _person_state(engine, keys, traces)
    assert after["events"]["bystander"] == before["events"]["bystander"]
    assert after["decisions"][APP] == 1  # the one it made after the split
    assert after["events"][APP] == before["events"][APP] - before["links"]  # its own facts
    assert after["decisions"]["bystander"] == 0 and engine.recalls.vector_store.count("bystander")
    assert whole >= 20, whole  # every statement up to the commit was failed once
    record(f"erasure atomicity[{_backend(engine)}] (person): {whole} statements failed, none "
           "left a partial erasure", erasure_faults=whole)  # fmt: skip


AUDIT = "aud-Zq7"


def _audited(engine: Engine) -> list[str]:
    """Facts under AUDIT for two users (one of them contested, so reviewed), and others;
    returns the traces of the decisions made."""
    def under(audit: str) -> dict[str, Any]:
        return {"provenance": {"audit_log_id": audit, "source_ref": f"ref-{audit}"}}

    traces: list[str | None] = []
    for user in ("u1", "u2"):
        engine.ingest(obs(user_id=user, value="airline:SQ", idempotency_key=f"{user}-sq",
                          **under(AUDIT)))  # fmt: skip
        engine.ingest(obs(user_id=user, key="seat.preference", value="aisle", **under("other")))
        traces.append(engine.decide(user, "travel", {}).trace_id)
    engine.ingest(obs(value="airline:CZ", source="behavior", confidence=0.95, **under("audB")))
    engine.ingest(obs(value="airline:CA", source="profile", confidence=0.95, **under("audC")))
    assert engine.review_queue()
    traces.append(engine.decide("u1", "travel", {}).trace_id)
    engine.ingest(obs(user_id="bystander", key="seat.preference", value="window"))
    _vectors(engine, "u1", "u2", "bystander")
    return [t for t in traces if t]


def _audit_state(engine: Engine, traces: list[str]) -> Snapshot:
    store, log = engine.store, engine.decision_log
    cited = store.fact_ids_with_audit_id(AUDIT)
    return {
        "facts": {u: len(ids) for u, ids in sorted(cited.items())},
        "events": {u: len(store.read_stream(u)) for u in ("u1", "u2")},
        "reviews": len(engine.review_queue()),
        "citing": sum(any(f in d.model_dump_json() for f in ids)
                      for u, ids in cited.items() for d in log.for_user(u)),
        "decisions": {u: len(log.for_user(u)) for u in ("u1", "u2")},
        "vectors": {u: engine.recalls.vector_store.count(u) for u in ("u1", "u2")},
        "traces": _traces(engine, traces),
    }


def _audit_gone(state: Snapshot) -> bool:
    return state["facts"] == {} and state["reviews"] == 0 and not any(state["vectors"].values())


def test_an_audit_id_erasure_failed_at_any_statement_is_all_or_nothing(
    opened: tuple[Engine, Any, StatementFaults],
) -> None:
    engine, _, faults = opened
    traces = _audited(engine)
    before = _audit_state(engine, traces)
    assert before["facts"] == {"u1": 1, "u2": 1} and before["reviews"] == 1
    assert before["citing"] >= 2

    whole = _fail_each_statement(
        lambda: engine.erase_audit_id(AUDIT), faults, lambda: _audit_state(engine, traces),
        _audit_gone,
    )

    after = _audit_state(engine, traces)
    assert after["traces"] < before["traces"] == 3
    assert after["citing"] == 0 and sum(after["decisions"].values()) < sum(
        before["decisions"].values())  # fmt: skip
    assert [f.value for f in engine.facts("u2")] == ["aisle"]
    assert engine.recalls.vector_store.count("bystander") == 1
    assert whole >= 10, whole
    record(f"erasure atomicity[{_backend(engine)}] (audit id): {whole} statements failed, none "
           "left a partial erasure", erasure_faults=whole)  # fmt: skip
