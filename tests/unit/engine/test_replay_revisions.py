"""Replay after the schemas or the ontology in force changed: the record is made again under
what is in force now, and revisions that differ are reported apart from differences in the
decision itself, which alone make it not reproduced."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memkg import Engine, EngineConfig, FrozenClock
from memkg.scaffold import init_root
from support.observations import obs

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)


def _decided(db: Path) -> str:
    with Engine.open(db, clock=FrozenClock(NOW), config=EngineConfig(shacl=False)) as engine:
        engine.ingest(obs(value="airline:MU"))
        return engine.decide("u1", "travel", {"airline": "airline:MU"}).decision_id


def test_adding_a_domain_leaves_old_decisions_reproduced(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    decision_id = _decided(db)
    init_root(tmp_path / "root", "pets")  # a new domain: schemas, ontology and rules
    config = EngineConfig(roots=(tmp_path / "root",), shacl=False)
    with Engine.open(db, clock=FrozenClock(NOW), config=config) as engine:
        report = engine.replay(decision_id)

    assert report.reproduced, report.differences  # was False: every old decision
    assert report.differences == ()
    changed = " ".join(report.revisions_changed)
    assert "$.revisions.ontology" in changed and "pets/" in changed


def test_a_decision_that_differs_is_not_reproduced_whatever_the_revisions(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memkg.db"
    decision_id = _decided(db)
    init_root(tmp_path / "root", "pets")
    config = EngineConfig(roots=(tmp_path / "root",), shacl=False)
    with Engine.open(db, clock=FrozenClock(NOW), config=config) as engine:
        engine.decision_log._db.execute(  # the record altered after the fact
            "UPDATE decisions SET record = replace(record, '\"decided\"', '\"no_match\"')"
        )
        report = engine.replay(decision_id)

    assert not report.reproduced
    assert any(d.startswith("$.result.status") for d in report.differences)
    assert report.revisions_changed  # still reported, beside the differences
