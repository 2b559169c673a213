"""What the review queue and a resolution read from the store: the reviews still open and the
one being resolved, never every review the log ever held. Counted through the store (events
handed over, users whose streams are read) as the resolved reviews grow tenfold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock, InvalidOperation
from support.observations import T0, obs
from support.review_reads import CONTESTED, StoreReads, freeze


def _open(kind: str, tmp_path: Path, name: str) -> Engine:
    if kind == "memory":
        return Engine(clock=FrozenClock(T0))
    return Engine.open(tmp_path / f"{name}.db", clock=FrozenClock(T0))


def _costs(kind: str, tmp_path: Path, resolved: int) -> dict[str, Any]:
    """What a warm queue read, a resolution and the next queue read take from a store
    holding ``resolved`` resolved reviews and three open ones."""
    with _open(kind, tmp_path, f"r{resolved}") as engine:
        for i in range(resolved + 3):
            freeze(engine, f"u{i:03d}")
        for review in engine.review_queue()[:resolved]:
            engine.resolve_review(review.review_id, "airline:SQ", "settled")
        engine.review_queue()  # the first read of a process folds the log's reviews once
        reads = StoreReads(engine.store)
        costs: dict[str, Any] = {}
        queue = engine.review_queue()
        assert len(queue) == 3
        costs["queue"] = reads.take()
        engine.projections.reset()  # no user resident: what the resolution loads shows
        settled = engine.resolve_review(queue[0].review_id, "airline:CA", "phoned")
        assert settled.status.value == "resolved"
        events, users = reads.take()
        costs["resolve"] = (events, users == {queue[0].user_id})
        freeze(engine, "late")
        reads.take()
        assert [r.user_id for r in engine.review_queue()] == [queue[1].user_id,
                                                              queue[2].user_id, "late"]  # fmt: skip
        costs["queue after a write"] = reads.take()
        assert len(engine.review_queue(include_resolved=True)) == resolved + 4
        return costs


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_queue_and_a_resolution_read_no_more_as_resolved_reviews_grow_tenfold(
    kind: str, tmp_path: Path
) -> None:
    few, many = (_costs(kind, tmp_path, n) for n in (5, 50))
    assert few == many
    # a warm queue reads only the review events appended since it last looked: after the
    # resolution and a new freeze, those two
    assert many["queue"] == ({}, set())
    assert many["queue after a write"] == ({"read_reviews": 2}, set())
    # a resolution reads its review's freeze (again under the lock) and loads its user only
    assert many["resolve"] == ({"read_reviews": 2}, True)


def _audit(audit: str) -> dict[str, Any]:
    return {"provenance": {"audit_log_id": audit, "source_ref": f"ref-{audit}"}}


def _shared_queue(desk: Engine, agent: Engine) -> None:
    """``desk`` keeps its queue while ``agent`` (another process's engine on the same store)
    freezes, resolves, erases and purges: each shows on the desk's next read."""
    assert desk.review_queue() == []
    freeze(agent, "ann")
    freeze(agent, "bo")
    for i, (value, source, confidence) in enumerate(CONTESTED):
        agent.ingest(obs(user_id="cy", value=value, source=source, confidence=confidence,
                         **_audit(f"aud{i}")))  # fmt: skip
    assert [r.user_id for r in desk.review_queue()] == ["ann", "bo", "cy"]
    ann = desk.review_queue()[0].review_id
    agent.resolve_review(ann, "airline:SQ", "confirmed by phone")
    assert [r.user_id for r in desk.review_queue()] == ["bo", "cy"]
    with pytest.raises(InvalidOperation) as closed:
        desk.resolve_review(ann, "airline:CA", "too late")
    assert closed.value.code == "review.closed"
    agent.erase("bo")
    assert [r.user_id for r in desk.review_queue()] == ["cy"]
    agent.erase_audit_id("aud0")  # a purge takes the reviews that weighed the facts
    assert desk.review_queue() == []
    freeze(agent, "di")
    [di] = desk.review_queue()
    desk.resolve_review(di.review_id, "airline:CZ", "settled")
    assert agent.review_queue() == [] and desk.review_queue() == []
    assert [r.user_id for r in agent.review_queue(include_resolved=True)] == ["ann", "di"]


def test_another_engine_s_freezes_resolutions_and_erasures_reach_a_kept_queue(
    tmp_path: Path,
) -> None:
    with (
        Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as desk,
        Engine.open(tmp_path / "m.db", clock=FrozenClock(T0, seed=1)) as agent,
    ):
        _shared_queue(desk, agent)


@pytest.mark.postgres
def test_on_postgresql_another_process_s_reviews_reach_a_kept_queue(
    postgres_dsn: str, pg_schema: str
) -> None:
    with (
        Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(T0)) as desk,
        Engine.connect(postgres_dsn, schema=pg_schema, clock=FrozenClock(T0, seed=1)) as agent,
    ):
        _shared_queue(desk, agent)


def test_an_erasure_leaves_no_review_claim_held_in_the_process(tmp_path: Path) -> None:
    """The open reviews a process keeps hold what users said (the claims): an erasure drops
    them at once, not at the next read of the queue."""
    engine = _open("sqlite", tmp_path, "m.db")
    freeze(engine, "u1")
    freeze(engine, "u2")
    assert {r.user_id for r in engine.review_queue()} == {"u1", "u2"}
    engine.erase("u1")
    held = engine.reviews.queue._open.values()  # what the process holds, before any read
    assert not any("u1" in repr(r) for r in held)
    assert [r.user_id for r in engine.review_queue()] == ["u2"]
