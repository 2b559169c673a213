"""A merge accounts for every live fact: each source's claims merge into that source's claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.engine.migrations import MigrationRefused
from support.observations import T0
from support.schema_roots import reopen

V1 = {"$schema": "https://json-schema.org/draft/2020-12/schema",
      "x-memkg": {"domain": "wealth", "group": "profile", "version": 1}, "type": "object",
      "properties": {
          "home.city": {"type": "string", "x-memkg": {"kind": "preference"}},
          "home.country": {"type": "string", "x-memkg": {"kind": "preference"}}}}  # fmt: skip
PLACE = {"type": "object", "properties": {"city": {"type": "string"},
                                          "country": {"type": ["string", "null"]}},
         "x-memkg": {"kind": "preference"}}  # fmt: skip
V2 = {**V1, "x-memkg": {**V1["x-memkg"], "version": 2}, "properties": {"home.place": PLACE}}
STRICT = """migration: v2
domain: wealth
from: profile@1
to: profile@2
steps:
  - merge: [home.city, home.country]
    to:
      - key: home.place
        value: {object: {city: {copy: /home.city}, country: {copy: /home.country}}}
"""
LENIENT = STRICT.replace(
    "country: {copy: /home.country}",
    "country: {cases: [{when: {path: /home.country, exists: true},"
    " then: {copy: /home.country}}], otherwise: {unknown: null}}",
)


def said(key: str, value: Any, source: str, **fields: Any) -> dict[str, Any]:
    return {"user_id": "u1", "domain": "wealth", "key": key, "value": value, "source": source,
            "confidence": 0.9, **fields}  # fmt: skip


def _store(tmp_path: Path) -> tuple[Path, Engine]:
    root = tmp_path / "root"
    (root / "schemas/wealth/migrations").mkdir(parents=True)
    (root / "schemas/wealth/profile@1.json").write_text(json.dumps(V1), encoding="utf-8")
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    for obs in (said("home.city", "Oslo", "dialogue"), said("home.country", "NO", "dialogue"),
                said("home.city", "Bergen", "profile", confidence=0.95)):  # fmt: skip
        engine.ingest(obs)
    return root, engine


def _upgrade(root: Path, plan: str) -> Path:
    (root / "schemas/wealth/profile@2.json").write_text(json.dumps(V2), encoding="utf-8")
    path = root / "schemas/wealth/migrations/v2.yaml"
    path.write_text(plan, encoding="utf-8")
    return path


def test_a_source_that_lacks_a_merged_key_blocks_naming_its_fact(tmp_path: Path) -> None:
    root, old = _store(tmp_path)
    plan = _upgrade(root, STRICT)
    engine = reopen(old, root)
    report = engine.migration_dry_run(plan)
    assert report.counts["facts"] == 3  # every live fact, though merged into one per source
    assert report.verdict == "BLOCK"
    [blocked] = [f for f in report.findings if f.code == "fact.unmappable"]
    bergen = next(f for f in engine.facts("u1") if f.value == "Bergen")
    assert blocked.subject == bergen.id
    assert "profile" in blocked.message and "/home.country" in blocked.message
    with pytest.raises(MigrationRefused):
        engine.apply_migration(plan)


def test_each_source_s_claims_become_that_source_s_merged_claim(tmp_path: Path) -> None:
    root, old = _store(tmp_path)
    plan = _upgrade(root, LENIENT)
    engine = reopen(old, root)
    report = engine.migration_dry_run(plan)
    assert report.verdict == "PASS", report.findings
    assert (report.counts["facts"], report.counts["migrated"]) == (3, 2)
    merged = {tuple(sorted(e["old"])) for e in report.examples["migrated"]}
    assert merged == {("home.city", "home.country"), ("home.city",)}
    engine.apply_migration(plan)
    live = sorted((f.key, json.dumps(f.value, sort_keys=True), f.source.value, f.schema_version)
                  for f in engine.facts("u1"))  # fmt: skip
    assert live == [
        ("home.place", '{"city": "Bergen", "country": null}', "profile", 2),
        ("home.place", '{"city": "Oslo", "country": "NO"}', "dialogue", 2),
    ]
    assert engine.migration_dry_run(plan).counts["facts"] == 0  # nothing left under old keys


def test_a_merged_fact_is_no_surer_than_its_least_certain_part(tmp_path: Path) -> None:
    from datetime import timedelta

    from memkg.engine.migrations import StoredPii
    from memkg.evolution.apply import events_for
    from memkg.evolution.migration import parse_plan
    from memkg.evolution.outcome import migrate
    from memkg.model.fact import Fact, FactStatus, Provenance, Source
    from memkg.validate.registry import SchemaRegistry

    def held(key: str, value: str, seq: int, **extra: Any) -> Fact:
        fields: dict[str, Any] = {
            "id": f"fact_{seq}", "user_id": "u1", "domain": "wealth", "key": key,
            "value": value, "kind": "preference", "source": Source.DIALOGUE, "confidence": 0.9,
            "scope": "global", "observed_at": T0, "recorded_at": T0, "provenance": Provenance(),
            "sensitivity": "public", "status": FactStatus.ACTIVE, "schema_version": 1, "seq": seq,
        }  # fmt: skip
        return Fact(**{**fields, **extra})

    folder = tmp_path / "wealth"
    folder.mkdir()
    (folder / "profile@1.json").write_text(json.dumps(V1), encoding="utf-8")
    (folder / "profile@2.json").write_text(json.dumps(V2), encoding="utf-8")
    specs = SchemaRegistry(tmp_path)
    old, new = specs.group("wealth", "profile", 1), specs.group("wealth", "profile", 2)
    facts = [held("home.city", "Oslo", 1, valid_until=T0 + timedelta(days=3),
                  status=FactStatus.PENDING_CONFIRMATION),
             held("home.country", "NO", 2, confidence=0.6)]  # the newest: active, no expiry
    pii = StoredPii(lambda _: b"salt")
    [outcome] = migrate(parse_plan(STRICT, "p.yaml"), facts, old, new, pii)
    events = events_for(parse_plan(STRICT, "p.yaml"), outcome, new, FrozenClock(T0), pii)
    merged = events[0].payload["fact"]
    assert merged["status"] == "pending_confirmation" and merged["confidence"] == 0.6
    assert merged["valid_until"] == (T0 + timedelta(days=3)).isoformat().replace("+00:00", "Z")


# erasing an audit id takes what a migration made of its facts: a merged fact holds each
# part's value, though it can carry only one part's audit id


def _merged(tmp_path: Path) -> Engine:
    root = tmp_path / "root"
    (root / "schemas/wealth/migrations").mkdir(parents=True)
    (root / "schemas/wealth/profile@1.json").write_text(json.dumps(V1), encoding="utf-8")
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    engine.ingest(said("home.city", "Oslo", "dialogue", provenance={"audit_log_id": "aud-city"}))
    engine.ingest(said("home.country", "NO", "dialogue",
                       provenance={"audit_log_id": "aud-country"}))  # fmt: skip
    engine.ingest(said("home.city", "Bergen", "profile", provenance={"audit_log_id": "aud-hr"}))
    plan = _upgrade(root, LENIENT)
    engine = reopen(engine, root)
    engine.apply_migration(plan)
    return engine


def _everything(engine: Engine) -> str:
    """Every event the log holds of the user, as text."""
    return json.dumps([e.payload for e in engine.store.read_stream("u1")], sort_keys=True)


def test_erasing_the_older_parts_audit_id_takes_the_merged_fact(tmp_path: Path) -> None:
    engine = _merged(tmp_path)
    assert "Oslo" in _everything(engine)
    engine.erase_audit_id("aud-city")
    held = _everything(engine)
    assert "Oslo" not in held
    assert "Bergen" in held  # another source's claim, under another audit id, stays
    assert [f.value for f in engine.facts("u1")] == [{"city": "Bergen", "country": None}]


def test_erasing_the_newer_parts_audit_id_takes_it_too(tmp_path: Path) -> None:
    engine = _merged(tmp_path)
    engine.erase_audit_id("aud-country")
    held = _everything(engine)
    assert '"NO"' not in held
    assert "Oslo" in held  # the city's own fact, in history, under its own audit id
