"""Upcasting: a fact stored under an old key version reads as the current version says."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.evolution.migration import MigrationError, parse_plan
from memkg.evolution.upcast import Upcasters
from memkg.validate.registry import SchemaRegistry
from support.observations import T0, obs
from support.schema_roots import SEAT_PLAN, add_seat_choice, project_copy, reopen


def test_the_registry_is_keyed_by_domain_key_and_version(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    add_seat_choice(root)
    registry = SchemaRegistry(root / "schemas")
    plan = parse_plan(SEAT_PLAN, "p.yaml")
    upcasters = Upcasters()
    upcasters.register(plan, registry.group("travel", "flight", 1),
                       registry.group("travel", "flight", 2))  # fmt: skip
    assert len(upcasters) == 1
    found = upcasters.get("travel", "seat.preference", 1)
    assert found is not None and (found.to_key, found.to_version) == ("seat.choice", 2)
    assert upcasters.get("travel", "seat.preference", 2) is None


def test_current_reads_upcast_old_facts_and_history_keeps_what_was_stored(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    config = EngineConfig(roots=(root,), shacl=False)
    old = Engine(config=config, clock=FrozenClock(T0))
    stored = old.ingest(obs(key="seat.preference", value="no_preference"))
    old.ingest(obs(key="cabin.class", value="business"))
    add_seat_choice(root)
    new = reopen(old, root)
    assert new.registry.spec("travel", "seat.preference") is None  # removed by flight@2
    assert len(new.upcasters) == 1
    seat = next(f for f in new.facts("u1") if f.id == stored.fact_id)
    assert (seat.key, seat.value, seat.schema_version) == ("seat.choice", "any", 2)
    assert [f.key for f in new.facts("u1")] == ["cabin.class", "seat.choice"]
    [raw] = new.history("u1", "seat.preference")
    assert (raw.value, raw.schema_version) == ("no_preference", 1)
    assert new.facts("u1", as_of=stored.seq)[0].key == "seat.preference"  # the past as it was


def test_a_graph_read_without_its_memory_reads_old_facts_upcast(tmp_path: Path) -> None:
    """The freeze check reads the user's graph, not ``memory``: a user folded anew that way
    still reads a fact stored under an old key version as the current one."""
    root = project_copy(tmp_path)
    old = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    old.ingest(obs(key="seat.preference", value="no_preference"))
    add_seat_choice(root)
    new = reopen(old, root)
    new.projections.forget("u1")
    memory = new.projections.graph("u1").memory
    assert [(f.key, f.value) for f in memory.current("travel", T0)] == [("seat.choice", "any")]


def test_a_step_that_changes_what_is_hashed_never_upcasts(tmp_path: Path) -> None:
    """Hashing on read would need the user's salt, and a hash cannot be read back as clear
    text: such steps are written by ``apply`` only."""
    import json

    root = project_copy(tmp_path)
    add_seat_choice(root)
    v2 = root / "schemas/travel/flight@2.json"
    doc = json.loads(v2.read_text(encoding="utf-8"))
    doc["properties"]["seat.choice"]["x-pii"] = "hash"
    v2.write_text(json.dumps(doc), encoding="utf-8")
    registry = SchemaRegistry(root / "schemas")
    upcasters = Upcasters()
    upcasters.register(parse_plan(SEAT_PLAN, "p.yaml"), registry.group("travel", "flight", 1),
                       registry.group("travel", "flight", 2))  # fmt: skip
    assert len(upcasters) == 0


def test_two_plans_upcasting_the_same_key_version_are_refused_naming_both_files(
    tmp_path: Path,
) -> None:
    """Reads followed whichever plan loaded last, so an old fact's value depended on the
    order of two files; the author learns of the clash only from the data."""
    root = project_copy(tmp_path)
    old = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    stored = old.ingest(obs(key="seat.preference", value="no_preference"))
    add_seat_choice(root)
    other = root / "schemas/travel/migrations/seat_choice_two.yaml"
    other.write_text(SEAT_PLAN.replace("no_preference: any", "no_preference: middle"))
    new = reopen(old, root)
    assert new.upcasters.get("travel", "seat.preference", 1) is None  # neither plan is read
    first, second = sorted(new.setup.plan_problems, key=lambda e: e.file)
    files = ("schemas/travel/migrations/seat_choice.yaml",
             "schemas/travel/migrations/seat_choice_two.yaml")  # fmt: skip
    assert (first.file, second.file) == files and first.code == "migration.conflict"
    for problem in (first, second):
        assert all(f in problem.message for f in files) and problem.line == 7  # the step
        assert "seat.preference" in problem.message
    seat = next(f for f in new.facts("u1") if f.id == stored.fact_id)
    assert (seat.key, seat.schema_version) == ("seat.preference", 1)  # as stored
    # applying either would make this process read by it, and no other after a restart
    with pytest.raises(MigrationError, match=r"also upcasts seat\.preference"):
        new.apply_migration(root / "schemas/travel/migrations/seat_choice.yaml")
    assert new.upcasters.get("travel", "seat.preference", 1) is None
    assert [e.type.value for e in new.read_events("u1")] == ["fact.asserted"]
