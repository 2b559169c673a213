"""The organ-meat migration end to end: check, dry run (BLOCK, then PASS), apply, resume."""

from __future__ import annotations

import io
import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.cli import main
from memkg.engine.migrations import MigrationRefused
from memkg.events.memory import MemoryEventStore
from memkg.model.fact import FactStatus
from support.observations import T0
from support.schema_roots import PLAN, add_seat_choice, diet, project_copy, reopen, reveal

V2 = "schemas/health/diet@2.json"
HIDDEN = (V2, "schemas/health/migrations")
USERS = {"u1": ["halal"], "u2": ["vegetarian"], "u3": ["no_organ_meat", "no_pork"],
         "u4": ["gluten_free"]}  # fmt: skip
DIET_RULE = """description: Heparin and some capsules are organ-derived; who avoids organ meat asks.
owner: pharmacy@memkg
version: 1
hit_policy: first
default:
  then: {action: approve_prescription}
  reason_code: NO_DIET_CONCERN
  explain: "No diet on record speaks against it"
rules:
  - id: health.diet_organ_derived
    when:
      - fact: {key: diet.restrictions, contains: no_organ_meat}
    then: {action: ask_pharmacist}
    reason_code: ORGAN_DERIVED
    explain: "Avoids organ meat: a pharmacist checks for organ-derived ingredients"
"""


class FlakyStore(MemoryEventStore):
    """Fails the append after ``fail_after`` more appends: a crash half-way."""

    fail_after: int | None = None

    def append(self, *args: Any, **kwargs: Any) -> Any:
        if self.fail_after is not None:
            if self.fail_after == 0:
                raise RuntimeError("power cut")
            self.fail_after -= 1
        return super().append(*args, **kwargs)


def _v1(tmp_path: Path, store: MemoryEventStore | None = None) -> tuple[Path, Engine]:
    root = project_copy(tmp_path / "root", hide=HIDDEN)
    engine = Engine(store, config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    engine.ingest(diet("u3", ["no_pork"]))
    for user, value in USERS.items():
        engine.ingest(diet(user, value))
    gone = engine.ingest(diet("u5", ["kosher"]))
    engine.retract("u5", gone.fact_id, "the user asked us to forget it")
    return root, engine


def _upgrade(root: Path) -> None:
    """Ship diet@2 and its plan."""
    for rel in HIDDEN:
        reveal(root, rel)


def _guessless(root: Path) -> Path:
    path = root / "guessless.yaml"
    text = (root / PLAN).read_text(encoding="utf-8")
    path.write_text(text.replace("              otherwise: {unknown: unknown}\n", ""), "utf-8")
    return path


def _cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, json.loads(out.getvalue().splitlines()[-1])


def test_check_reports_the_change_as_breaking_with_a_counterexample() -> None:
    from support.schema_roots import ROOT

    code, report = _cli("schema", "check", str(ROOT / "schemas/health/diet@1.json"),
                        str(ROOT / V2))  # fmt: skip
    assert code == 3 and report["kind"] == "group" and not report["compatible"]
    [change] = report["keys"]["diet.restrictions"]["changes"]
    assert (change["code"], change["counterexample"]) == ("enum.value_removed", ["no_organ_meat"])
    plain = Path(__file__).parents[1] / "cases/schema_compat"  # any plain schema pair works too
    assert plain.is_dir()


def test_organ_meat_migration_end_to_end(tmp_path: Path) -> None:
    root, old = _v1(tmp_path)
    _upgrade(root)
    engine = reopen(old, root)

    blocked = engine.migration_dry_run(_guessless(root))
    assert blocked.verdict == "BLOCK" and blocked.exit_status == 3
    unmappable = {f.subject for f in blocked.findings if f.code == "fact.unmappable"}
    live = {u: engine.facts(u, "health")[0].id for u in USERS}
    assert unmappable == {live["u1"], live["u4"]}
    assert blocked.counts == {
        "migrated": 2,
        "unchanged": 0,
        "unmappable": 2,
        "invalid": 0,
        "dropped": 0,
        "lossy": 0,
        "unknown": 0,
        "questions": 0,
        "facts": 4,
    }
    with pytest.raises(MigrationRefused):
        engine.apply_migration(_guessless(root))
    assert all(f.schema_version == 1 for u in USERS for f in engine.facts(u))

    report = engine.migration_dry_run(root / PLAN)
    assert report.verdict == "PASS", report.findings
    assert report.counts["migrated"] == 4 and report.counts["unknown"] == 2
    before = {u: {f.id: f.value for f in engine.memory(u).facts.values()} for u in [*USERS, "u5"]}
    head = engine.store.head()

    applied = engine.apply_migration(root / PLAN)
    assert (applied.migrated, applied.resumed, applied.left) == (4, 0, 0)
    for user, values in before.items():  # history kept: every old fact still there, as it was
        held = engine.memory(user).facts
        assert {i: held[i].value for i in values} == values
    history = engine.history("u3", "diet.restrictions")
    assert [(f.value, f.status, f.schema_version) for f in history] == [
        (["no_pork"], FactStatus.SUPERSEDED, 1),
        (["no_organ_meat", "no_pork"], FactStatus.SUPERSEDED, 1),
        (["no_pork"], FactStatus.ACTIVE, 2)]  # fmt: skip
    assert history[1].status_reason == "migration:diet_organ_meat"
    assert history[2].provenance.source_ref == "migration:diet_organ_meat"
    assert history[2].supersedes == history[1].id and history[2].source.value == "dialogue"
    assert history[2].provenance.audit_log_id == "intake-7"  # erasure by audit id still finds it
    now = {u: {f.key: f.value for f in engine.facts(u)} for u in USERS}
    assert now["u1"]["diet.organ_meat_tolerance"] == {"level": "unknown", "exceptions": []}
    assert now["u2"]["diet.organ_meat_tolerance"]["level"] == "never"
    assert now["u3"] == {
        "diet.restrictions": ["no_pork"],
        "diet.organ_meat_tolerance": {"level": "never", "exceptions": []},
    }
    assert engine.facts("u5") == []  # retracted before: history, not migrated
    assert [f.key for f in engine.facts("u3", as_of=head)] == ["diet.restrictions"]

    again = engine.apply_migration(root / PLAN)
    assert (again.migrated, again.events) == (0, 0)
    assert engine.migration_dry_run(root / PLAN).counts["facts"] == 0


def test_apply_resumes_after_a_crash(tmp_path: Path) -> None:
    store = FlakyStore()
    root, old = _v1(tmp_path, store)
    _upgrade(root)
    engine = reopen(old, root)
    store.fail_after = 2
    with pytest.raises(RuntimeError, match="power cut"):
        engine.apply_migration(root / PLAN)
    done = sum(f.schema_version == 2 for u in USERS for f in engine.facts(u))
    assert done == 4  # two users' facts were written (two new facts each), atomically
    store.fail_after = None
    later = FrozenClock(T0 + timedelta(days=2), seed=7)  # a new process: new ids
    resumed = reopen(old, root, later).apply_migration(root / PLAN)
    assert (resumed.migrated, resumed.resumed) == (2, 0)
    fresh = reopen(old, root)
    keys = sorted(f.key for u in USERS for f in fresh.facts(u))
    assert keys == ["diet.organ_meat_tolerance"] * 4 + ["diet.restrictions"] * 4


def test_a_rule_reading_a_retyped_value_blocks_and_decisions_that_would_change_warn(
    tmp_path: Path,
) -> None:
    root, old = _v1(tmp_path)
    (root / "rules/health/diet_check.yaml").write_text(DIET_RULE, encoding="utf-8")
    made = old.decide("u3", "health", {}, decision="diet_check")
    assert made.result.action == "ask_pharmacist"
    _upgrade(root)
    engine = reopen(old, root)
    report = engine.migration_dry_run(root / PLAN)
    assert report.verdict == "BLOCK"
    [rule] = [f for f in report.findings if f.code == "rule.breaks"]
    assert (rule.file, rule.line, rule.subject) == ("rules/health/diet_check.yaml", 12,
                                                    "health.diet_organ_derived")  # fmt: skip
    assert "no_organ_meat" in rule.message
    [changed] = [f for f in report.findings if f.code == "decision.outcome_changed"]
    assert changed.subject == made.decision_id
    assert "was decided ask_pharmacist, would be decided approve_prescription" in changed.message

    fixed = tmp_path / "fixed_rules"
    shutil.copytree(root / "rules", fixed)
    (fixed / "health/diet_check.yaml").write_text(DIET_RULE.replace(
        "{key: diet.restrictions, contains: no_organ_meat}",
        "{key: diet.organ_meat_tolerance, field: level, eq: never}"), encoding="utf-8")  # fmt: skip
    assert engine.migration_dry_run(root / PLAN, rules=fixed).verdict == "PASS"


def test_a_dry_run_remakes_decisions_apart_from_the_engine_s_projections(tmp_path: Path) -> None:
    root, old = _v1(tmp_path)
    (root / "rules/health/diet_check.yaml").write_text(DIET_RULE, encoding="utf-8")
    old.decide("u3", "health", {}, decision="diet_check")
    _upgrade(root)
    engine = reopen(old, root)
    graph = engine.user_graph("u3")
    stored = {f.key for f in engine.projections.live_facts(graph, "health")}
    report = engine.migration_dry_run(root / PLAN)
    # the decision was made again over memory as the plan would have left it ...
    assert [f.code for f in report.findings].count("decision.outcome_changed") == 1
    # ... while the engine's own projections still hold what is stored
    assert engine.user_graph("u3") is graph
    assert {f.key for f in engine.projections.live_facts(graph, "health")} == stored
    assert stored == {"diet.restrictions"}


def test_a_rule_reading_a_removed_key_blocks_naming_file_and_line(tmp_path: Path) -> None:
    root, old = _v1(tmp_path)
    rules = tmp_path / "rules"
    shutil.copytree(root / "rules", rules)
    (rules / "health/diet_check.yaml").write_text(DIET_RULE, encoding="utf-8")
    _upgrade(root)
    doc = json.loads((root / V2).read_text(encoding="utf-8"))
    del doc["properties"]["diet.restrictions"]  # a v2 without the key
    (root / V2).write_text(json.dumps(doc), encoding="utf-8")
    plan = root / "drop.yaml"
    plan.write_text("migration: diet_drop\ndomain: health\nfrom: diet@1\nto: diet@2\nsteps:\n"
                    "  - {key: diet.restrictions, drop: asked afresh as organ meat tolerance}\n",
                    encoding="utf-8")  # fmt: skip
    report = reopen(old, root).migration_dry_run(plan, rules=rules)
    assert report.verdict == "BLOCK"
    [rule] = [f for f in report.findings if f.code == "rule.breaks"]
    assert (rule.file, rule.line, rule.key) == ("rules/health/diet_check.yaml", 12,
                                                "diet.restrictions")  # fmt: skip
    assert "rule.unknown_key" in rule.message and "dropped by the plan" in rule.message
    assert {c.key: c.change for c in report.key_changes}["diet.restrictions"] == "removed"
    assert report.counts["dropped"] == 4


def test_a_rename_blocks_on_the_rules_and_cases_that_read_the_old_key(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    plan = add_seat_choice(root)
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    report = engine.migration_dry_run(plan)
    where = {(f.code, f.file, f.line) for f in report.findings if f.severity == "block"}
    assert ("rule.breaks", "rules/travel/offers.yaml", 19) in where
    assert any(code == "case.breaks" and file == "rules/travel/offers.cases.yaml"
               for code, file, _ in where)  # fmt: skip
    assert {c.key: c.change for c in report.key_changes}["seat.preference"] == "renamed"


def test_cli_dry_run_and_apply_on_sqlite(tmp_path: Path) -> None:
    root = project_copy(tmp_path / "root", hide=HIDDEN)
    db = str(tmp_path / "memkg.db")
    config = EngineConfig(roots=(root,), shacl=False)
    with Engine.open(db, config=config, clock=FrozenClock(T0)) as e:
        for user, value in USERS.items():
            e.ingest(diet(user, value))
    _upgrade(root)
    base = ("--db", db, "--root", str(root), "schema", "migrate")
    code, blocked = _cli(*base, str(_guessless(root)), "--dry-run")
    assert code == 3 and blocked["verdict"] == "BLOCK"
    code, report = _cli(*base, str(root / PLAN), "--dry-run")
    assert code == 0 and report["verdict"] == "PASS"
    # the plan by its name (as over HTTP), or by the path `schema history` shows, from any folder
    for named in ("health/diet_organ_meat", str(PLAN)):
        assert _cli(*base, named, "--dry-run") == (0, report), named
    code, missing = _cli(*base, "health/no_such_plan", "--dry-run")
    assert code == 1 and missing["error"] == "migration.not_found", missing
    assert "schemas/DOMAIN/migrations/NAME.yaml" in missing["message"]
    out = io.StringIO()
    assert main([*base, str(root / PLAN), "--dry-run", "--format", "text"], out) == 0
    assert out.getvalue().startswith("PASS: migration diet_organ_meat")
    code, applied = _cli(*base, str(root / PLAN), "--apply")
    assert code == 0 and applied["migrated"] == 4
    code, refused = _cli(*base, str(_guessless(root)), "--apply")
    assert code == 0 and refused["migrated"] == 0  # nothing of diet@1 is left to migrate
    code, history = _cli("--root", str(root), "schema", "history", "health", "diet.restrictions")
    assert code == 0 and [v["version"] for v in history["groups"][0]["versions"]] == [1, 2]


def test_apply_works_from_what_a_user_holds_when_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process restates or retracts a fact between the migration's read of the user
    and its write: the migration reads the user again and migrates what they hold now."""
    import memkg.engine.migrations as migrations

    root = project_copy(tmp_path / "root", hide=HIDDEN)
    db = tmp_path / "memkg.db"
    config = EngineConfig(roots=(root,), shacl=False)
    with Engine.open(db, config=config, clock=FrozenClock(T0)) as first:
        said = {
            u: first.ingest(diet(u, ["no_pork", "vegetarian"])).fact_id for u in ("ra", "rb", "rc")
        }
    _upgrade(root)
    later = T0 + timedelta(hours=1)
    with Engine.open(db, config=config, clock=FrozenClock(later, seed=2)) as mine, Engine.open(
        db, config=config, clock=FrozenClock(later, seed=3)
    ) as other:  # fmt: skip
        events_for, meddled = migrations.events_for, set()

        def the_other_writes_first(plan: Any, outcome: Any, *args: Any) -> Any:
            user = outcome.facts[0].user_id
            if user in ("ra", "rb") and user not in meddled:  # once, between read and write
                meddled.add(user)
                if user == "ra":
                    other.ingest(diet("ra", ["halal"]))
                else:
                    other.retract("rb", said["rb"], "the user asked us to forget it")
            return events_for(plan, outcome, *args)

        monkeypatch.setattr(migrations, "events_for", the_other_writes_first)
        applied = mine.apply_migration(root / PLAN)
        assert meddled == {"ra", "rb"} and (applied.migrated, applied.left) == (1, 0)  # rc
        assert mine.resolve("ra", "health", "diet.restrictions").value == ["halal"]
        assert [f.value for f in mine.facts("ra") if f.key == "diet.restrictions"] == [["halal"]]
        assert [f.key for f in mine.facts("rb")] == []  # retracted: nothing to migrate
        assert {f.schema_version for f in mine.facts("rc")} == {2}


@pytest.mark.parametrize(
    ("text", "said"),
    [("[" * 100_000 + "]" * 100_000, "levels deep"),
     ('{"type": "object", "type": "string"}', "appears twice"),
     ('{"maximum": NaN}', "not a finite number"),
     ("{", "not valid JSON")],
)  # fmt: skip
def test_check_refuses_a_file_it_cannot_read_as_a_schema(
    tmp_path: Path, text: str, said: str
) -> None:
    ok, bad = tmp_path / "ok.json", tmp_path / "bad.json"
    ok.write_text('{"type": "string"}', encoding="utf-8")
    bad.write_text(text, encoding="utf-8")
    code, report = _cli("schema", "check", str(ok), str(bad))
    assert code == 1 and report["error"] == "schema.read"
    assert str(bad) in report["message"] and said in report["message"]


def test_the_admin_dry_run_is_audited_under_each_person_its_examples_show(
    tmp_path: Path,
) -> None:
    pytest.importorskip("starlette")
    from support.service import client, keyed_app, token

    root, old = _v1(tmp_path)
    _upgrade(root)
    engine = reopen(old, root)
    app, keyring = keyed_app(engine)
    ran = client(app, token(keyring)).post("/v1/admin/migrations/dry-run",
                                           json={"plan": "health/diet_organ_meat"})  # fmt: skip
    assert ran.status_code == 200
    shown = {e["user_id"] for examples in ran.json()["examples"].values() for e in examples}
    assert shown and shown <= set(USERS)
    for person in shown:
        assert [(r.action, r.domain) for r in keyring.audit(subject=person)] == [
            ("migration_dry_run", "health")
        ]
