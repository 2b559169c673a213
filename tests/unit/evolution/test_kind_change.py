"""A new version that changes a key's kind: the dry run says so (``key.kind_changed``), and the
apply writes the facts anew with the new kind. A preference made a state expires as a write of
that state would: its ``valid_for_hours`` after it was observed. Before, the dry run passed
without a word and the apply left the old kind and no expiry, so a mood from two years ago
kept driving decisions."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memkg import Engine, EngineConfig, FrozenClock
from support.schema_roots import project_copy

NOW = datetime(2026, 5, 2, 9, tzinfo=UTC)
PLAN = (
    "migration: seat_state\ndomain: travel\nfrom: flight@1\nto: flight@2\nsteps:\n"
    '  - {key: seat.preference, to: [{key: seat.preference, value: {copy: ""}}]}\n'
)


def with_seat_state(root: Path) -> None:
    doc = json.loads((root / "schemas/travel/flight@1.json").read_text(encoding="utf-8"))
    doc["x-memkg"]["version"] = 2
    doc["$id"] = doc["$id"].replace("@1", "@2")
    seat = doc["properties"]["seat.preference"]["x-memkg"]
    assert seat["kind"] == "preference"
    seat.update(kind="state", valid_for_hours=2)
    (root / "schemas/travel/flight@2.json").write_text(json.dumps(doc), encoding="utf-8")
    (root / "schemas/travel/migrations").mkdir()
    (root / "schemas/travel/migrations/seat_state.yaml").write_text(PLAN, encoding="utf-8")


def seat(value: str, observed: datetime) -> dict[str, object]:
    return {"user_id": "u1", "domain": "travel", "key": "seat.preference", "value": value,
            "source": "dialogue", "confidence": 0.9,
            "observed_at": observed.isoformat()}  # fmt: skip


def test_a_kind_change_is_reported_and_applied(tmp_path: Path) -> None:
    root = project_copy(tmp_path / "root")
    config = EngineConfig(roots=(root,), shacl=False)
    old = Engine(config=config, clock=FrozenClock(NOW - timedelta(minutes=30)))
    old.ingest(seat("window", NOW - timedelta(days=700)))
    old.ingest({**seat("aisle", NOW - timedelta(hours=1)), "user_id": "u2"})
    with_seat_state(root)
    engine = Engine(old.store, config=config, clock=FrozenClock(NOW))
    report = engine.migration_dry_run("travel/seat_state")
    [changed] = [f for f in report.findings if f.code == "key.kind_changed"]
    assert "preference → state" in changed.message and changed.line == 6
    assert report.counts["migrated"] == 2
    engine.apply_migration("travel/seat_state")
    # the two-year-old preference is a state that expired long ago; the recent one holds
    assert [f.value for f in engine.facts("u1", "travel") if f.key == "seat.preference"] == []
    [recent] = [f for f in engine.facts("u2", "travel") if f.key == "seat.preference"]
    assert recent.kind.value == "state" and recent.schema_version == 2
    assert recent.valid_until == NOW + timedelta(hours=1)


def test_a_new_kind_is_taken_as_a_write_of_it_would_be(tmp_path: Path) -> None:
    root = project_copy(tmp_path / "root")
    config = EngineConfig(roots=(root,), shacl=False)
    old = Engine(config=config, clock=FrozenClock(NOW - timedelta(minutes=30)))
    said = {"user_id": "u1", "domain": "travel", "source": "dialogue", "confidence": 0.9,
            "observed_at": (NOW - timedelta(hours=1)).isoformat()}  # fmt: skip
    # raised above its key's default, and stated as a change in the world
    old.ingest({**said, "key": "seat.preference", "value": "aisle", "sensitivity": "special",
                "change": True, "provenance": {"consent_granted": True}})  # fmt: skip
    old.ingest({**said, "key": "travel.companions", "value": 2})  # a state, with its window
    # a state whose window was over long ago: it stays expired as a preference
    old.ingest({**said, "user_id": "u2", "key": "travel.companions", "value": 3,
                "observed_at": (NOW - timedelta(days=30)).isoformat()})  # fmt: skip
    assert old.facts("u2", "travel") == []
    doc = json.loads((root / "schemas/travel/flight@1.json").read_text(encoding="utf-8"))
    doc["x-memkg"]["version"] = 2
    doc["$id"] = doc["$id"].replace("@1", "@2")
    doc["properties"]["seat.preference"]["x-memkg"]["kind"] = "fact"
    companions = doc["properties"]["travel.companions"]["x-memkg"]
    assert companions["kind"] == "state"
    companions["kind"] = "preference"
    companions.pop("valid_for_hours", None)
    (root / "schemas/travel/flight@2.json").write_text(json.dumps(doc), encoding="utf-8")
    (root / "schemas/travel/migrations").mkdir()
    (root / "schemas/travel/migrations/kinds.yaml").write_text(
        PLAN.replace("seat_state", "kinds"), encoding="utf-8"
    )
    engine = Engine(old.store, config=config, clock=FrozenClock(NOW))
    engine.apply_migration("travel/kinds")
    found = {f.key: f for f in engine.facts("u1", "travel")}
    seat, companions_now = found["seat.preference"], found["travel.companions"]
    # a dialogue `fact` waits for the user, as a write of it does; never less sensitive than
    # it was written, and still a stated change
    assert (seat.kind.value, seat.status.value) == ("fact", "pending_confirmation")
    assert (seat.sensitivity.value, seat.change) == ("special", True)
    # a state's window does not outlive it as a preference
    assert (companions_now.kind.value, companions_now.valid_until) == ("preference", None)
    assert engine.facts("u2", "travel") == []
