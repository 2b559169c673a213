"""Replay after the schemas or the ontology in force changed: the record is made again under
what is in force now, and revisions that differ are reported apart from differences in the
decision itself, which alone make it not reproduced."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def _rewrite(db: Path, decision_id: str, change: Callable[[dict[str, Any]], None]) -> None:
    with sqlite3.connect(db) as con:
        [record] = con.execute("SELECT record FROM decisions WHERE decision_id = ?",
                               (decision_id,)).fetchone()  # fmt: skip
        data = json.loads(record)
        change(data)
        con.execute("UPDATE decisions SET record = ? WHERE decision_id = ?",
                    (json.dumps(data), decision_id))  # fmt: skip


def _earlier_recorder(data: dict[str, Any]) -> None:
    """What an earlier memkg recorded: no recorder, one memory node fewer, a text worded so."""
    del data["revisions"]["recorder"]
    data["explanation"]["memory"] = data["explanation"]["memory"][:-1]
    data["explanation"]["summary"] += " (worded otherwise)"


def test_a_record_an_earlier_memkg_made_replays_on_its_outcome(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    decision_id = _decided(db)
    _rewrite(db, decision_id, _earlier_recorder)
    with Engine.open(db, clock=FrozenClock(NOW), config=EngineConfig(shacl=False)) as engine:
        report = engine.replay(decision_id)

    assert report.reproduced, report.differences  # was False after every upgrade
    changed = " ".join(report.revisions_changed)
    assert "$.revisions.recorder: recorded None" in changed
    assert "$.explanation.memory" in changed and "$.explanation.summary" in changed


def test_the_outcome_of_an_earlier_record_is_still_compared_exactly(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    decision_id = _decided(db)

    def altered(data: dict[str, Any]) -> None:
        _earlier_recorder(data)
        data["result"]["action"] = "something_else"

    _rewrite(db, decision_id, altered)
    with Engine.open(db, clock=FrozenClock(NOW), config=EngineConfig(shacl=False)) as engine:
        report = engine.replay(decision_id)
    assert not report.reproduced
    assert [d for d in report.differences if d.startswith("$.result.action")]


def test_the_same_recorder_compares_the_explanation_exactly(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    decision_id = _decided(db)

    def reworded(data: dict[str, Any]) -> None:
        data["explanation"]["summary"] += " (worded otherwise)"

    _rewrite(db, decision_id, reworded)
    with Engine.open(db, clock=FrozenClock(NOW), config=EngineConfig(shacl=False)) as engine:
        report = engine.replay(decision_id)
    assert not report.reproduced
    assert [d for d in report.differences if d.startswith("$.explanation.summary")]
