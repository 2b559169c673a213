"""After ``erase`` no byte of the user remains in any file memkg wrote."""

from __future__ import annotations

import threading
from pathlib import Path

from memkg import ConcurrencyConflict, Engine, FrozenClock
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
        files = [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
        assert _scan(files, [SECRET_USER, SECRET_VALUE])  # the scan can see them before

        receipt = engine.erase(SECRET_USER)

        assert receipt.removed["events"] == 60  # 30 asserted, 29 superseded, 1 phone
        assert receipt.removed["salts"] == 1
        assert receipt.removed["idempotency_keys"] == 30
        assert len(receipt.digest) == 64 and receipt.user_id == SECRET_USER
        assert str(db) in receipt.files
        assert engine.facts(SECRET_USER) == []
        assert [f.value for f in engine.facts("someone-else")] == ["aisle"]
        assert _scan(files, [SECRET_USER, SECRET_VALUE]) == {}
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
