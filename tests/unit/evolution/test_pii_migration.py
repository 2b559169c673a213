"""A plan that adds or removes ``x-pii: hash`` on a key: stored values follow the new version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.engine.migrations import MigrationRefused
from memkg.validate.guards import hash_pii
from support.observations import T0
from support.schema_roots import reopen

PLAN = """migration: v2
domain: wealth
from: profile@1
to: profile@2
steps:
  - key: home.city
    to: [{key: home.city, value: {copy: ""}}]
"""
REF = "advisor-id-4411"


def _group(version: int, *, hashed: bool) -> dict[str, Any]:
    ref: dict[str, Any] = {"type": "string", "x-memkg": {"kind": "preference"}}
    if hashed:
        ref["x-pii"] = "hash"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "x-memkg": {"domain": "wealth", "group": "profile", "version": version},
            "type": "object", "properties": {
                "advisor.ref": ref,
                "home.city": {"type": "string", "x-memkg": {"kind": "preference"}}}}  # fmt: skip


def _migrated(tmp_path: Path, *, before: bool, after: bool) -> tuple[Engine, Path]:
    root = tmp_path / "root"
    (root / "schemas/wealth/migrations").mkdir(parents=True)
    write = lambda name, doc: (root / "schemas/wealth" / name).write_text(  # noqa: E731
        json.dumps(doc), encoding="utf-8")  # fmt: skip
    write("profile@1.json", _group(1, hashed=before))
    old = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    old.ingest({"user_id": "u1", "domain": "wealth", "key": "advisor.ref", "value": REF,
                "source": "dialogue", "confidence": 0.9})  # fmt: skip
    write("profile@2.json", _group(2, hashed=after))
    (root / "schemas/wealth/migrations/v2.yaml").write_text(PLAN, encoding="utf-8")
    return reopen(old, root), root / "schemas/wealth/migrations/v2.yaml"


def test_adding_x_pii_hash_rehashes_what_is_stored(tmp_path: Path) -> None:
    engine, plan = _migrated(tmp_path, before=False, after=True)
    report = engine.migration_dry_run(plan)
    assert report.verdict == "WARN"
    assert report.counts["migrated"] == 1 and report.counts["unchanged"] == 0
    [change] = [c for c in report.key_changes if c.key == "advisor.ref"]
    assert "x-pii: hash added" in change.detail
    [pii] = [f for f in report.findings if f.code == "key.pii_hashed"]
    assert pii.severity == "warn" and "history" in pii.message
    engine.apply_migration(plan)
    [live] = engine.facts("u1")
    assert live.value == hash_pii(REF, ((),), engine.store.subject_salt("u1"))
    assert live.schema_version == 2 and live.value != REF
    assert engine.migration_dry_run(plan).counts["facts"] == 0


def test_removing_x_pii_hash_blocks_facts_that_hold_a_hash(tmp_path: Path) -> None:
    engine, plan = _migrated(tmp_path, before=True, after=False)
    [stored] = engine.facts("u1")
    assert str(stored.value).startswith("hmac-sha256:")
    report = engine.migration_dry_run(plan)
    assert report.verdict == "BLOCK"
    [blocked] = [f for f in report.findings if f.code == "fact.unmappable"]
    assert blocked.subject == stored.id and "cannot be turned back" in blocked.message
    assert any(f.code == "key.pii_unhashed" for f in report.findings)
    with pytest.raises(MigrationRefused):
        engine.apply_migration(plan)
