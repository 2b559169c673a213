"""Erasure by audit id reaches reviews; a purge never wedges the stream; reviews resolve once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, InvalidOperation
from support.observations import T0, obs


def _audit(audit: str) -> dict[str, object]:
    return {"provenance": {"audit_log_id": audit, "source_ref": f"ref-{audit}"}}


def _contested(engine: Engine) -> str:
    engine.ingest(obs(value="airline:SQ", **_audit("audA")))
    engine.ingest(obs(value="airline:CZ", source="behavior", confidence=0.95, **_audit("audB")))
    engine.ingest(obs(value="airline:CA", source="profile", confidence=0.95, **_audit("audC")))
    [review] = engine.review_queue()
    return review.review_id


def test_erasure_by_audit_id_removes_reviews_that_weighed_the_facts(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Engine.open(db, clock=FrozenClock(T0)) as engine:
        review_id = _contested(engine)
        engine.resolve_review(review_id, "airline:SQ", "user confirmed SQ by phone")
        engine.erase_audit_id("audA")
        for path in tmp_path.iterdir():
            data = path.read_bytes()
            assert b"airline:SQ" not in data and b"ref-audA" not in data, path.name
        assert engine.resolve("u1", "travel", "airline.preferred").value != "airline:SQ"
        # the purge removed the stream's last events: writes must still go through
        engine.ingest(obs(key="seat.preference", value="aisle"))
        assert "aisle" in [f.value for f in engine.facts("u1")]


def test_a_review_is_resolved_once_under_concurrency(engine: Engine) -> None:
    review_id = _contested(engine)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def resolve(value: str) -> None:
        barrier.wait()
        try:
            engine.resolve_review(review_id, value, "settled")
            outcomes.append("ok")
        except InvalidOperation:
            outcomes.append("closed")

    threads = [threading.Thread(target=resolve, args=(v,)) for v in ("airline:CZ", "airline:CA")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["closed", "ok"]
    resolved = [e for e in engine.store.read_stream("u1") if e.type.value == "review.resolved"]
    assert len(resolved) == 1
    with pytest.raises(InvalidOperation):
        engine.resolve_review(review_id, "airline:CZ", "again")


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda e: e.facts("u\ud800"), "user_id"),
        (lambda e: e.retract("u1", "fact_x", "oops \udfff"), "reason"),
        (lambda e: e.erase("\ud800"), "user_id"),
        (lambda e: e.decide("u1", "travel", {"x": "\ud800"}), "context.x"),
        (lambda e: e.resolve("u1", "travel", "seat.preference", session_id="\ud800"), "session_id"),
        (lambda e: e.render_profile("u1", "travel", session_id="\ud800"), "session_id"),
    ],
)
def test_arguments_with_lone_surrogates_are_refused_cleanly(
    engine: Engine, call: object, where: str
) -> None:
    with pytest.raises(InvalidOperation) as refused:
        call(engine)  # type: ignore[operator]
    assert refused.value.code == "text.invalid_unicode"
    assert refused.value.message.startswith(where)


def test_the_review_queue_costs_the_same_however_long_the_log(tmp_path: Path) -> None:
    """Listing and resolving reviews reads the log's reviews only (an index holds just them):
    the SQLite work of the queue is the same with 10 and with 1,200 other events stored."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        review_id = _contested(engine)
        db = engine.store._db  # type: ignore[attr-defined]
        steps: list[int] = []

        def queue_steps() -> int:
            steps.clear()
            db.set_progress_handler(lambda: steps.append(1), 10)  # per 10 VM instructions
            try:
                assert [r.review_id for r in engine.review_queue()] == [review_id]
            finally:
                db.set_progress_handler(None, 0)
            return len(steps)

        engine.ingest_many([obs(user_id="u2", key="seat.preference", value="aisle")] * 10)
        short = queue_steps()
        for batch in range(6):
            users = [f"v{batch}-{i}" for i in range(200)]
            engine.ingest_many([obs(user_id=u, key="seat.preference", value="a") for u in users])
        long = queue_steps()
        assert long <= short * 1.5, (short, long)  # reading the log: about 30 times as much
        engine.resolve_review(review_id, "airline:SQ", "confirmed by phone")
        assert engine.review_queue() == []
