"""A purge by audit id takes every decision that read the purged facts: those of an id merged
with their owner, and those the facts shaped without being bound (a near miss): no decision
left holds what they said, and every decision left still replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import Engine, FrozenClock, NotFound
from support.observations import CONSENTED, T0

AUDIT = {"audit_log_id": "aud-1"}


def _replays(engine: Engine, user: str) -> list[bool]:
    return [engine.replay(d.decision_id).reproduced for d in engine.decision_log.for_user(user)]


def test_a_merged_ids_decision_citing_the_purged_fact_goes(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        avoided = engine.ingest({"user_id": "b", "domain": "travel", "key": "airline.avoided",
                                 "value": ["airline:MU"], "source": "dialogue",
                                 "provenance": AUDIT})  # fmt: skip
        engine.ingest({"user_id": "a", "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "dialogue"})  # fmt: skip
        proposed = engine.merge_users("a", "b", by="ops", reason="one person")
        engine.merge_users("a", "b", by="ops", reason="one person", confirm=proposed.merge_id)
        made = engine.decide("a", "travel", {"airline": "airline:MU"})
        assert avoided.fact_id in made.model_dump_json() and made.trace_id is not None
        other = engine.decide("a", "health", {"symptom": "cough"})  # read nothing of b's
        receipts = engine.erase_audit_id("aud-1")
        assert sum(r.removed.get("decisions", 0) for r in receipts) == 1
        with pytest.raises(NotFound):
            engine.decision_log.get(made.decision_id)
        with pytest.raises(NotFound):
            engine.trace(made.trace_id)
        assert engine.decision_log.get(other.decision_id).decision_id == other.decision_id
        assert all(_replays(engine, "a"))
        for path in tmp_path.iterdir():
            assert avoided.fact_id.encode() not in path.read_bytes(), path.name


def test_a_decision_shaped_by_the_purged_fact_without_binding_it_goes(tmp_path: Path) -> None:
    """The asthma rule nearly fired on the purged condition (3 of 4 conditions holding): the
    decision's explanation says as much without naming the fact."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        asthma = engine.ingest({"user_id": "u", "domain": "health", "key": "medical.conditions",
                                "value": ["condition:asthma"], "source": "system",
                                "provenance": {**CONSENTED["provenance"], **AUDIT}})  # fmt: skip
        shaped = engine.decide("u", "health", {"symptom": "fever"})
        assert asthma.fact_id in shaped.model_dump_json()  # the facts it read are named
        before = engine.decide("u", "travel", {})  # another domain: reads none of it
        assert shaped.trace_id is not None
        engine.erase_audit_id("aud-1")
        with pytest.raises(NotFound):
            engine.decision_log.get(shaped.decision_id)
        with pytest.raises(NotFound):  # its trace names what it read too
            engine.trace(shaped.trace_id)
        assert engine.decision_log.get(before.decision_id).decision_id == before.decision_id
        assert all(_replays(engine, "u"))


def test_the_timezone_fact_a_decisions_local_time_came_from_is_read(tmp_path: Path) -> None:
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        zone = engine.ingest({"user_id": "u", "domain": "health", "key": "timezone",
                              "value": "Asia/Shanghai", "source": "profile",
                              "provenance": {**CONSENTED["provenance"], **AUDIT}})  # fmt: skip
        made = engine.decide("u", "health", {"symptom": "cough"})
        assert made.explanation.timezone == "Asia/Shanghai" and zone.fact_id in made.read
        given = engine.decide("u", "health", {"symptom": "cough", "timezone": "UTC"})
        assert zone.fact_id not in (given.read or ())  # the request named its own
        engine.erase_audit_id("aud-1")
        with pytest.raises(NotFound):
            engine.decision_log.get(made.decision_id)
        assert engine.replay(given.decision_id).reproduced


def test_a_record_kept_before_the_facts_read_were_still_replays(tmp_path: Path) -> None:
    import json
    import sqlite3

    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        engine.ingest({"user_id": "u", "domain": "travel", "key": "airline.avoided",
                       "value": ["airline:MU"], "source": "dialogue"})  # fmt: skip
        made = engine.decide("u", "travel", {"airline": "airline:MU"})
        assert made.read
        db = sqlite3.connect(tmp_path / "m.db")
        [(record,)] = db.execute("SELECT record FROM decisions WHERE decision_id = ?",
                                 (made.decision_id,)).fetchall()  # fmt: skip
        old = {k: v for k, v in json.loads(record).items() if k != "read"}
        with db:
            db.execute("UPDATE decisions SET record = ? WHERE decision_id = ?",
                       (json.dumps(old), made.decision_id))  # fmt: skip
        db.close()
        assert engine.decision_log.get(made.decision_id).read is None
        assert engine.replay(made.decision_id).reproduced
