"""Project copies for schema-evolution tests: a store written under old schemas, read under new."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memkg import Engine, EngineConfig, FrozenClock
from memkg.roots import builtin

ROOT = builtin("examples")
"""The example domains shipped with memkg: a root like any user's."""
PLAN = "schemas/health/migrations/diet_organ_meat.yaml"
CONSENT: dict[str, Any] = {"provenance": {"consent_granted": True, "consent_version": "v1",
                                          "audit_log_id": "intake-7"}}  # fmt: skip


def project_copy(target: Path, *, hide: tuple[str, ...] = ()) -> Path:
    """A copy of the example root under ``target``; ``hide`` moves files aside."""
    for name in ("schemas", "ontology", "rules"):
        shutil.copytree(ROOT / name, target / name)
    for rel in hide:
        (target / rel).rename(target / (rel + ".hidden"))
    return target


def reveal(root: Path, rel: str) -> None:
    (root / (rel + ".hidden")).rename(root / rel)


def diet(user: str, value: list[str], **fields: Any) -> dict[str, Any]:
    return {"user_id": user, "domain": "health", "key": "diet.restrictions", "value": value,
            "source": "dialogue", "confidence": 0.8, **CONSENT, **fields}  # fmt: skip


def reopen(engine: Engine, root: Path, clock: FrozenClock | None = None) -> Engine:
    """The same store and decision log, read with the schemas now under ``root``."""
    return Engine(engine.store, config=EngineConfig(roots=(root,), shacl=False),
                  clock=clock or FrozenClock(datetime(2026, 5, 2, 9, tzinfo=UTC)),
                  decision_log=engine.decision_log)  # fmt: skip


SEAT_PLAN = """migration: seat_choice
description: seat.preference becomes seat.choice; no_preference is now called any.
domain: travel
from: flight@1
to: flight@2
steps:
  - key: seat.preference
    to:
      - key: seat.choice
        value: {map: {values: {no_preference: any}}}
"""


def add_seat_choice(root: Path) -> Path:
    """flight@2 (seat.preference renamed seat.choice: window|aisle|middle|any) and its plan."""
    import json

    doc = json.loads((root / "schemas/travel/flight@1.json").read_text(encoding="utf-8"))
    doc["x-memkg"]["version"] = 2
    doc["$id"] = doc["$id"].replace("@1", "@2")
    seat = doc["properties"].pop("seat.preference")
    seat["enum"] = ["window", "aisle", "middle", "any"]
    doc["properties"]["seat.choice"] = seat
    (root / "schemas/travel/flight@2.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    (root / "schemas/travel/migrations").mkdir()
    plan = root / "schemas/travel/migrations/seat_choice.yaml"
    plan.write_text(SEAT_PLAN, encoding="utf-8")
    return plan
