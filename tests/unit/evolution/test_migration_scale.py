"""A migration's dry run holds one user's facts at a time, whatever the store holds.

Counted at two store sizes: the most facts a plan is run over at once, and the most outcomes
alive at once while they are tallied. The report is the one a single ``assess`` of every
user's outcomes gives (lossy outcomes, known only once every user is read, included).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.engine import migrations
from memkg.evolution.dry_run import DryRunReport, Tally, assess, key_changes
from memkg.evolution.outcome import FactOutcome, migrate
from support.observations import T0, obs
from support.schema_roots import add_seat_choice, project_copy, reopen

SEATS = ("window", "aisle", "middle", "no_preference")
LOSSY = "value: {map: {values: {no_preference: any}}}"
# middle and window both become window (lossy); aisle becomes a value flight@2 refuses
MIXED = "value: {map: {values: {no_preference: any, middle: window, aisle: centre}}}"


def _store(tmp_path: Path, users: int) -> tuple[Engine, Path]:
    root = project_copy(tmp_path / "root")
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    for n in range(users):
        user = f"u{n:03d}"
        engine.ingest(obs(user_id=user, key="seat.preference", value=SEATS[n % 4]))
        engine.ingest(obs(user_id=user, key="cabin.class", value="economy"))
    plan = add_seat_choice(root)
    for rules in (root / "rules/travel").glob("*.yaml"):  # the rules as flight@2 ships them
        text = rules.read_text(encoding="utf-8").replace("seat.preference", "seat.choice")
        rules.write_text(text.replace("no_preference", "any"), encoding="utf-8")
    plan.write_text(plan.read_text(encoding="utf-8").replace(LOSSY, MIXED), encoding="utf-8")
    return reopen(engine, root), plan


def _dry_run(engine: Engine, plan: Path, monkeypatch: pytest.MonkeyPatch
             ) -> tuple[DryRunReport, dict[str, int]]:  # fmt: skip
    """The dry run, with the most facts one run of the plan read and the most outcomes alive
    while one was tallied."""
    most = {"facts": 0, "outcomes": 0}
    ordered, add = migrations.ordered, Tally.add

    def counted(*args: Any, **kwargs: Any) -> Any:
        most["facts"] = max(most["facts"], len(args[1]))
        return ordered(*args, **kwargs)

    def alive(self: Tally, place: Any, outcome: FactOutcome) -> None:
        held = sum(isinstance(o, FactOutcome) for o in gc.get_objects())
        most["outcomes"] = max(most["outcomes"], held)
        add(self, place, outcome)

    monkeypatch.setattr(migrations, "ordered", counted)
    monkeypatch.setattr(Tally, "add", alive)
    report = engine.migration_dry_run(plan, decisions=0)
    monkeypatch.undo()
    return report, most


def test_the_dry_run_holds_one_users_facts_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, plan = _store(tmp_path / "small", 8)
    large, large_plan = _store(tmp_path / "large", 40)
    report, few = _dry_run(small, plan, monkeypatch)
    big, many = _dry_run(large, large_plan, monkeypatch)
    assert big.counts["facts"] == 5 * report.counts["facts"] == 80
    assert few == many == {"facts": 2, "outcomes": 2}  # a user's seat and cabin


@pytest.mark.parametrize("users", [8, 40])
def test_the_report_is_one_assess_of_every_users_outcomes(tmp_path: Path, users: int) -> None:
    engine, plan = _store(tmp_path, users)
    report = engine.migration_dry_run(plan, decisions=0)
    loaded, old, new = migrations.plan_and_specs(engine.evolution, plan)
    facts = [f for user in engine.store.users()
             for f in migrations.live_facts(engine.evolution, user)]  # fmt: skip
    outcomes = migrate(loaded, facts, old, new, migrations._dry_pii(engine.evolution))
    whole = assess(loaded, outcomes, key_changes(loaded, old, new), [], now=T0)
    assert report.counts["lossy"] == users // 2 > 0 and report.counts["invalid"] == users // 4
    assert (report.counts, report.examples, report.unlisted) == (
        whole.counts, whole.examples, whole.unlisted)  # fmt: skip
    assert [f for f in report.findings if f.code.startswith("fact.")] == list(whole.findings)


def test_an_apply_that_passes_reads_each_user_once_for_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lossy outcomes only warn: the apply does not read the users again for their
    examples (the dry run does, to list them)."""
    engine, plan = _store(tmp_path, 8)
    plan.write_text(plan.read_text(encoding="utf-8").replace(", aisle: centre", ""), "utf-8")
    reads = {"dry run": 0, "apply": 0}
    live = migrations.live_facts

    def counted(evo: Any, user: str) -> Any:
        reads[phase] += 1
        return live(evo, user)

    monkeypatch.setattr(migrations, "live_facts", counted)
    phase = "dry run"
    assert engine.migration_dry_run(plan, decisions=0).verdict == "WARN"
    phase = "apply"
    applied = engine.apply_migration(plan)
    assert (applied.verdict, applied.migrated) == ("WARN", 8)
    # the dry run: every user twice (lossy examples); the apply: once to judge, once to write
    assert reads == {"dry run": 16, "apply": 16}


@pytest.mark.parametrize("bystanders", [5, 50])
def test_the_dry_run_and_the_apply_read_only_the_users_of_the_plans_domain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bystanders: int
) -> None:
    """Users with nothing in the plan's domain are not folded, however many the store holds."""
    engine, plan = _store(tmp_path, 6)
    for n in range(bystanders):
        engine.ingest(obs(user_id=f"b{n:03d}", domain="commerce", key="product.viewed",
                          value="product:iphone_16", source="behavior"))  # fmt: skip
    read: list[str] = []
    live = migrations.live_facts
    monkeypatch.setattr(migrations, "live_facts",
                        lambda evo, user: read.append(user) or live(evo, user))  # fmt: skip
    report = engine.migration_dry_run(plan, decisions=0)
    assert report.counts["facts"] == 12
    assert sorted(set(read)) == [f"u{n:03d}" for n in range(6)]
    read.clear()
    plan.write_text(plan.read_text(encoding="utf-8").replace(MIXED, LOSSY), encoding="utf-8")
    applied = engine.apply_migration(plan)
    assert (applied.users, applied.migrated) == (6, 6)  # one seat each
    assert sorted(set(read)) == [f"u{n:03d}" for n in range(6)]
