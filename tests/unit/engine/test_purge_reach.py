"""A purge by audit id takes every decision that read the purged facts: those of an id merged
with their owner, and those the facts shaped without being bound (a near miss): no decision
left holds what they said, and every decision left still replays."""

from __future__ import annotations

from datetime import timedelta
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


def test_a_fact_that_won_arbitration_over_a_left_out_claim_is_read(tmp_path: Path) -> None:
    """The offers table reads no airline, yet the left-out entry of the losing airline says
    it lost to the winner: the winner shaped the record, and its purge takes it."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        won = engine.ingest({"user_id": "u", "domain": "travel", "key": "airline.preferred",
                             "value": "airline:MU", "source": "dialogue", "confidence": 0.95,
                             "provenance": AUDIT})  # fmt: skip
        engine.ingest({"user_id": "u", "domain": "travel", "key": "airline.preferred",
                       "value": "airline:CA", "source": "behavior", "confidence": 0.5})
        engine.ingest({"user_id": "u", "domain": "travel", "key": "seat.preference",
                       "value": "window", "source": "dialogue", "confidence": 0.9})
        made = engine.decide("u", "travel", {"trip_type": "family"}, decision="offers")
        assert "lost_arbitration" in {left.reason for left in made.left_out}
        assert made.read is not None and won.fact_id in made.read
        engine.erase_audit_id("aud-1")
        with pytest.raises(NotFound):
            engine.decision_log.get(made.decision_id)
        assert all(_replays(engine, "u"))


@pytest.mark.parametrize("settled", [False, True])
def test_a_review_kept_by_a_merged_id_goes_with_the_purged_claim(
    tmp_path: Path, settled: bool
) -> None:
    """The review of a conflict between two merged ids' claims lives in one id's stream; it
    weighed (and a reviewer may have repeated) the other's purged claim."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        engine.ingest({"user_id": "web", "domain": "travel", "key": "cabin.class",
                       "value": "business", "source": "profile", "confidence": 0.95})
        engine.ingest({"user_id": "phone", "domain": "travel", "key": "cabin.class",
                       "value": "premium_economy", "source": "dialogue", "confidence": 0.95,
                       "provenance": AUDIT})  # fmt: skip
        proposed = engine.merge_users("web", "phone", by="ops", reason="one person")
        engine.merge_users("web", "phone", by="ops", reason="one person",
                           confirm=proposed.merge_id)  # fmt: skip
        [review] = engine.review_queue()
        if settled:
            engine.resolve_review(review.review_id, "premium_economy", "said so on the phone")
        engine.erase_audit_id("aud-1")
        for path in tmp_path.iterdir():
            assert b"premium_economy" not in path.read_bytes(), path.name
        assert engine.review_queue() == []
        assert engine.resolve("web", "travel", "cabin.class").value == "business"


def _views(engine: Engine, user: str, audit: str, days: range) -> None:
    """Evening browsing (20:30) on ``days`` before T0, each view under ``audit``."""
    for day in days:
        engine.ingest({"user_id": user, "domain": "commerce", "key": "product.viewed",
                       "value": "product:iphone_16", "source": "behavior", "confidence": 0.9,
                       "observed_at": (T0 - timedelta(days=day)).replace(hour=20, minute=30),
                       "provenance": {"audit_log_id": audit}})  # fmt: skip


def test_a_pattern_derived_from_purged_behaviour_goes_and_is_derived_again(
    tmp_path: Path,
) -> None:
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        _views(engine, "u", "aud-feed-42", range(1, 15))  # two weeks: the weekdays show
        [early] = engine.derive_patterns("u", "commerce")
        engine.ingest({"user_id": "u", "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "behavior"})  # fmt: skip
        _views(engine, "u", "aud-feed-43", range(15, 29))  # stored after the pattern
        [receipt] = engine.erase_audit_id("aud-feed-43")
        assert receipt.removed["facts"] == 14  # the pattern counted none of them
        assert engine.fact("u", early.fact_id).key == "shopping.hours"

        [receipt] = engine.erase_audit_id("aud-feed-42")
        assert receipt.removed["facts"] == 15  # the views and the hours they showed
        with pytest.raises(NotFound):
            engine.fact("u", early.fact_id)
        assert [f.key for f in engine.facts("u")] == ["seat.preference"]
        _views(engine, "u", "aud-feed-44", range(1, 15))
        assert [r.fact_id for r in engine.derive_patterns("u", "commerce")] != []


def test_a_pattern_a_merged_view_derived_from_purged_behaviour_goes(tmp_path: Path) -> None:
    """``phone`` merged into ``web``: the view of both derives the pattern, stored in web's
    stream, from phone's behaviour; purging that behaviour takes it, and a split leaves web
    nothing of it."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        _views(engine, "phone", "aud-feed-42", range(1, 15))
        engine.ingest({"user_id": "web", "domain": "travel", "key": "seat.preference",
                       "value": "aisle", "source": "dialogue"})  # fmt: skip
        proposed = engine.merge_users("web", "phone", by="ops", reason="one person")
        engine.merge_users("web", "phone", by="ops", reason="one person",
                           confirm=proposed.merge_id)  # fmt: skip
        [made] = engine.derive_patterns("web", "commerce")
        [owner] = {e.user_id for e in engine.store.read_all() if e.fact_id == made.fact_id}
        assert owner == "web"  # the view's writes go to its primary id
        receipts = {r.user_id: r.removed["facts"] for r in engine.erase_audit_id("aud-feed-42")}
        assert receipts == {"phone": 14, "web": 1}
        engine.split_users("web", "phone", by="ops", reason="two people")
        assert [f.key for f in engine.facts("web")] == ["seat.preference"]


def test_a_pattern_of_an_id_once_merged_derived_after_the_split_stays(tmp_path: Path) -> None:
    """``web`` and ``phone`` merged, then split: web's own pattern, derived from web's own
    behaviour after the split, is none of the purged feed's business."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        _views(engine, "phone", "aud-phone", range(1, 15))
        proposed = engine.merge_users("web", "phone", by="ops", reason="one person")
        engine.merge_users("web", "phone", by="ops", reason="one person",
                           confirm=proposed.merge_id)  # fmt: skip
        engine.split_users("web", "phone", by="ops", reason="two people")
        _views(engine, "web", "aud-web", range(15, 29))
        [made] = engine.derive_patterns("web", "commerce")
        receipts = {r.user_id: r.removed["facts"] for r in engine.erase_audit_id("aud-phone")}
        assert receipts == {"phone": 14}
        assert engine.fact("web", made.fact_id).key == "shopping.hours"
