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
