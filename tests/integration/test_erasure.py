"""After ``erase`` no byte of the user remains in any file memkg wrote."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from memkg import ConcurrencyConflict, Engine, FrozenClock, NotFound
from memkg.decisions import PostgresDecisionLog
from memkg.events.postgres import PostgresEventStore
from memkg.model.decision import Decision
from support.observations import CONSENTED, obs

SECRET_USER = "patient-Zq81x"
SECRET_VALUE = "Quokkamycin-7731"


def _scan(paths: list[Path], needles: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        if not path.exists():
            continue
        data = path.read_bytes()
        for needle in needles:
            for encoded in {needle.encode("utf-8"), needle.encode("utf-16-le")}:
                if encoded in data:
                    found.setdefault(needle, []).append(path.name)
    return found


def test_erase_leaves_no_byte_of_the_user(tmp_path: Path, clock: FrozenClock) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as engine:
        for index in range(30):
            engine.ingest(
                obs(
                    user_id=SECRET_USER,
                    domain="health",
                    key="medication.current",
                    value=[f"{SECRET_VALUE} {index} mg"],
                    idempotency_key=f"k{index}",
                    **CONSENTED,
                )
            )
        engine.ingest(
            obs(
                user_id=SECRET_USER,
                domain="health",
                key="contact.phone",
                value="+86 138 1234 5678",
                source="profile",
                **CONSENTED,
            )
        )
        engine.ingest(obs(user_id="someone-else", key="seat.preference", value="aisle"))
        traces = [  # what the agent was given: traced, and erased with the user
            engine.render_profile(SECRET_USER, "health").trace_id or "",
            engine.recall(SECRET_USER, f"is {SECRET_VALUE} current", domain="health").trace_id,
        ]
        files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
        assert _scan(files, [SECRET_USER, SECRET_VALUE, *map(str, traces)])  # seen before

        receipt = engine.erase(SECRET_USER)

        assert receipt.removed["events"] == 60  # 30 asserted, 29 superseded, 1 phone
        assert receipt.removed["salts"] == 1
        assert receipt.removed["idempotency_keys"] == 30
        assert len(receipt.digest) == 64 and receipt.user_id == SECRET_USER
        assert str(db) in receipt.files
        assert engine.facts(SECRET_USER) == []
        assert [f.value for f in engine.facts("someone-else")] == ["aisle"]
        assert receipt.removed["traces"] == 2
        assert _scan(files, [SECRET_USER, SECRET_VALUE, *map(str, traces)]) == {}
    assert _scan([p for p in tmp_path.iterdir()], [SECRET_USER, SECRET_VALUE]) == {}


def test_two_concurrent_writers_one_conflict(tmp_path: Path, clock: FrozenClock) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=clock) as seed:
        seed.ingest(obs(value="airline:MU"))
    engines = [Engine.open(db, clock=clock) for _ in range(2)]
    seen = [e.memory("u1").version for e in engines]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            engines[index].ingest(
                obs(value=["airline:CA", "airline:HO"][index], source="behavior"),
                expected_version=seen[index],
            )
            outcomes.append("ok")
        except ConcurrencyConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict", "ok"]
    with Engine.open(db, clock=clock) as reader:
        values = sorted(f.value for f in reader.facts("u1"))
        assert len(values) == 2 and "airline:MU" in values  # the winner's write, nothing lost
        asserted = [e for e in reader.store.read_stream("u1") if e.type.value == "fact.asserted"]
        assert len(asserted) == 2
    for engine in engines:
        engine.close()


def _intake(key: str, value: Any, audit_log_id: str) -> dict[str, Any]:
    provenance = {**CONSENTED["provenance"], "audit_log_id": audit_log_id}
    return obs(
        user_id=SECRET_USER, domain="health", key=key, value=value, source="profile",
        provenance=provenance,
    )  # fmt: skip


def _decide_before_and_after_the_secret(engine: Engine) -> tuple[Decision, Decision]:
    """A decision citing only the allergy (intake-B), then one citing the medication (intake-A)."""
    engine.ingest(_intake("medical.allergies", ["allergen:penicillin"], "intake-B"))
    context = {"allergen": "allergen:penicillin", "drug_class": "antibiotic"}
    before = engine.decide(SECRET_USER, "health", context, decision="medication")
    engine.ingest(_intake("medication.current", [f"{SECRET_VALUE} 5 mg"], "intake-A"))
    context = {"allergen": "allergen:none", "drug_class": "antibiotic"}
    citing = engine.decide(SECRET_USER, "health", context, decision="medication")
    assert SECRET_VALUE in citing.model_dump_json()
    assert SECRET_VALUE not in before.model_dump_json()
    return before, citing


def test_erase_by_audit_id_removes_the_decisions_citing_those_facts(
    tmp_path: Path, clock: FrozenClock
) -> None:
    db = tmp_path / "memkg.db"
    files = [db, db.with_name(db.name + "-wal")]
    with Engine.open(db, clock=clock) as engine:
        before, citing = _decide_before_and_after_the_secret(engine)
        assert _scan(files, [SECRET_VALUE])

        receipts = engine.erase_audit_id("intake-A")

        assert [(r.user_id, r.removed["decisions"]) for r in receipts] == [(SECRET_USER, 1)]
        with pytest.raises(NotFound):
            engine.explain(citing.decision_id)
        assert engine.decisions(SECRET_USER) == [before]
        assert _scan(files, [SECRET_VALUE]) == {}
    assert _scan(list(tmp_path.iterdir()), [SECRET_VALUE]) == {}


@pytest.mark.postgres
def test_a_postgres_engine_logs_decisions_in_postgres(
    postgres_dsn: str, pg_schema: str, clock: FrozenClock
) -> None:
    with Engine(PostgresEventStore(postgres_dsn, schema=pg_schema), clock=clock) as engine:
        assert isinstance(engine.decision_log, PostgresDecisionLog)
        before, citing = _decide_before_and_after_the_secret(engine)

    with Engine(PostgresEventStore(postgres_dsn, schema=pg_schema), clock=clock) as other:
        assert other.decisions(SECRET_USER) == [before, citing]  # another process sees them
        receipts = other.erase_audit_id("intake-A")
        assert [(r.user_id, r.removed["decisions"]) for r in receipts] == [(SECRET_USER, 1)]
        assert other.decisions(SECRET_USER) == [before]
