"""``rules test`` says what its exit code says, and a case cannot state memory a write refuses;
``rules lint`` reports questions about undeclared keys."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memkg.cli import main


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    text = out.getvalue()
    return code, json.loads(text) if text.startswith("{") else text


def scaffold(tmp_path: Path) -> tuple[str, str]:
    root, db = str(tmp_path / "mine"), str(tmp_path / "m.db")
    assert cli("init", root, "--domain", "pets")[0] == 0
    return root, db


NEVER = """\
  - id: pets.never
    when:
      - fact: {key: pets.budget, lt: 0}
    then: {action: suggest_item, urgency: normal, parameters: {item: x}}
    reason_code: NEVER
    explain: "never"
"""


def test_coverage_failing_on_an_uncovered_rule_says_passed_false(tmp_path: Path) -> None:
    root, db = scaffold(tmp_path)
    table = Path(root, "rules/pets/suggestion.yaml")
    table.write_text(table.read_text().replace("rules:\n", "rules:\n" + NEVER))
    code, report = cli("--root", root, "--no-examples", "--db", db, "rules", "test", "--coverage")
    assert code == 1 and report["passed"] is False
    assert report["uncovered_rules"] and report["failed"] == []
    code, report = cli("--root", root, "--no-examples", "--db", db, "rules", "test")
    assert code == 0 and report["passed"] is True  # without --coverage it is no failure


BAD_CASE = """
  - name: facts a write would refuse
    now: "2026-05-01T09:00:00Z"
    facts:
      - {key: pets.favourite, value: "pets_item:basic"}
      - {key: pets.budget, value: "lots"}
    expect:
      action: ask_preference
"""


def test_a_case_fact_with_an_undeclared_key_or_a_refused_value_fails_the_case(
    tmp_path: Path,
) -> None:
    root, db = scaffold(tmp_path)
    cases = Path(root, "rules/pets/suggestion.cases.yaml")
    cases.write_text(cases.read_text() + BAD_CASE)
    code, report = cli("--root", root, "--no-examples", "--db", db, "rules", "test")
    assert code == 1 and report["passed"] is False
    [failed] = report["failed"]
    assert failed["case"] == "facts a write would refuse"
    first, second = failed["failures"][:2]
    assert first.startswith("facts[0] pets.favourite: key.unknown") and "pets.favorite" in first
    assert second.startswith("facts[1] pets.budget: schema.type") and "'lots'" in second


def test_questions_about_an_undeclared_key_are_a_lint_finding(tmp_path: Path) -> None:
    root, db = scaffold(tmp_path)
    Path(root, "rules/pets/questions.yaml").write_text(
        'pets.favourite:\n  conflict:\n    en: "Do you prefer {value} or {other}?"\n'
    )
    code, report = cli("--root", root, "--no-examples", "--db", db, "rules", "lint")
    assert code == 1
    [found] = report["findings"]
    assert found["code"] == "rule.unknown_key"
    assert (found["file"], found["line"]) == ("rules/pets/questions.yaml", 1)
    assert "pets.favourite" in found["message"] and "pets.favorite" in found["message"]


def test_startup_and_reload_refuse_questions_lint_refuses(tmp_path: Path) -> None:
    from memkg import Engine
    from memkg.config import EngineConfig
    from memkg.engine.rule_bundle import RulesRefused

    root, _ = scaffold(tmp_path)
    config = EngineConfig(roots=(Path(root),), examples=False, shacl=False)
    engine = Engine(config=config)
    old = engine.intent.rules.digest
    Path(root, "rules/pets/questions.yaml").write_text(
        'pets.favourite:\n  conflict:\n    en: "Do you prefer {value} or {other}?"\n'
    )
    with pytest.raises(RulesRefused) as refused:
        engine.reload_rules(Path(root, "rules"))
    assert engine.intent.rules.digest == old
    [found] = refused.value.findings
    assert (found.code, found.file, found.line) == (
        "rule.unknown_key",
        "rules/pets/questions.yaml",
        1,
    )
    with pytest.raises(RulesRefused) as refused:
        Engine(config=config).intent.load()  # as on first use
    assert [f.code for f in refused.value.findings] == ["rule.unknown_key"]


def test_reloading_a_roots_rules_keeps_every_other_domains_rules(tmp_path: Path) -> None:
    """``reload_rules("<root>/rules")`` (the README's example): the root's domains take the
    new rules, every other domain keeps the rules in force, not what its files on disk say
    now (another root's edit, not reloaded, stays out); ``rules_diff`` with the same folder
    compares just that (every other domain was dropped, and its next decision refused)."""
    from memkg import Engine
    from memkg.config import EngineConfig

    root, _ = scaffold(tmp_path)
    other = str(tmp_path / "other")
    assert cli("init", other, "--domain", "garden")[0] == 0
    engine = Engine(config=EngineConfig(roots=(Path(root), Path(other)), shacl=False))
    sources = dict(engine.intent.rules.bundle.sources)
    assert {"pets", "garden", "travel", "health"} <= {r.split("/")[0] for r in sources}
    edited = next(Path(other, "rules", "garden").glob("*.yaml"))
    edited.write_text(edited.read_text() + "\n# edited on disk, not reloaded\n")
    logged = engine.decide("u1", "travel", {})  # a decision for the diff to make again
    diff = engine.rules_diff(None, Path(root, "rules"), replay=5)
    assert (diff.verdict, diff.counts["replayed"]) == ("PASS", 1), diff.verdict
    assert [d.decision_id for d in diff.decisions] == [logged.decision_id]
    engine.reload_rules(Path(root, "rules"))
    assert engine.intent.rules.bundle.sources == sources  # garden's as in force, not as edited
    made = engine.decide("u1", "travel", {})
    assert made.result.status.value != "invalid_input", made.problems


def test_a_folder_reloaded_before_any_rules_were_loaded_replaces_a_broken_file(
    tmp_path: Path,
) -> None:
    """Nothing in force yet, the root's pets rules broken on disk: a staged folder holding
    good pets rules is what a reload compiles for pets (the broken file it replaces is not in
    the way), the other domains as their files are."""
    import shutil

    from memkg import Engine
    from memkg.config import EngineConfig

    root, _ = scaffold(tmp_path)
    stage = tmp_path / "stage"
    shutil.copytree(Path(root, "rules"), stage)
    broken = next(p for p in Path(root, "rules", "pets").glob("*.yaml") if p.name != "domain.yaml"
                  and not p.name.endswith(".cases.yaml"))  # fmt: skip
    broken.write_text("rules: [")
    engine = Engine(config=EngineConfig(roots=(Path(root),), shacl=False))
    engine.reload_rules(stage)
    assert {"pets", "travel"} <= set(engine.intent.rules.bundle.domains)


def test_two_reloads_at_once_both_take_effect(tmp_path: Path) -> None:
    """Two folders, two domains, reloaded by two threads at the same moment: each builds on
    the rules in force once the other swapped, so both domains' new rules are in force after
    (the last swap dropped the first reload's rules)."""
    import shutil
    import threading

    from memkg import Engine
    from memkg.config import EngineConfig
    from memkg.roots import builtin

    root, _ = scaffold(tmp_path)
    pets, travel = tmp_path / "sp" / "rules", tmp_path / "st" / "rules"
    shutil.copytree(Path(root, "rules", "pets"), pets / "pets")
    shutil.copytree(builtin("examples") / "rules" / "travel", travel / "travel")
    marked = {"pets": pets / "pets" / "suggestion.yaml",
              "travel": travel / "travel" / "offers.yaml"}  # fmt: skip
    for domain, path in marked.items():
        path.write_text(f"# {domain} reloaded\n" + path.read_text())
    for _ in range(3):
        engine = Engine(config=EngineConfig(roots=(Path(root),), shacl=False))
        start = threading.Barrier(2)

        def reload(folder: Path, engine: Engine = engine, start: threading.Barrier = start) -> None:
            start.wait()
            engine.reload_rules(folder)

        threads = [threading.Thread(target=reload, args=(f,)) for f in (pets, travel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        sources = engine.intent.rules.bundle.sources
        assert all(f"# {d} reloaded" in sources[f"{d}/{p.name}"] for d, p in marked.items())


MOOD_RULE = """\
  - id: pets.mood_known
    when:
      - fact: {key: pets.mood}
    then: {action: suggest_item, urgency: normal, parameters: {item: pets_item:toy}}
    reason_code: MOOD
    explain: "feels {pets.mood}"
"""

MOOD_CASES = """
  - name: a mood of two days ago has expired
    now: "2026-05-04T10:00:00Z"
    facts:
      - {key: pets.mood, value: sad, observed_days_ago: 2}
    expect:
      action: ask_preference
  - name: a mood of today holds
    now: "2026-05-04T10:00:00Z"
    facts:
      - {key: pets.mood, value: sad}
    expect:
      action: suggest_item
"""


def test_a_case_state_expires_as_a_write_of_it_would(tmp_path: Path) -> None:
    """A ``state`` fact of a case expires after its key's hours, as a write of it would: a case
    without ``valid_hours`` kept it for ever, and passed where live memory had moved on."""
    root, db = scaffold(tmp_path)
    schema = Path(root, "schemas/pets/profile@1.json")
    declared = json.loads(schema.read_text())
    declared["properties"]["pets.mood"] = {
        "type": "string", "x-memkg": {"kind": "state", "sensitivity": "public",
                                      "valid_for_hours": 24},
    }  # fmt: skip
    schema.write_text(json.dumps(declared))
    table = Path(root, "rules/pets/suggestion.yaml")
    table.write_text(table.read_text().replace("rules:\n", "rules:\n" + MOOD_RULE))
    cases = Path(root, "rules/pets/suggestion.cases.yaml")
    cases.write_text(cases.read_text() + MOOD_CASES)
    code, report = cli("--root", root, "--no-examples", "--db", db, "rules", "test")
    assert code == 0 and report["passed"] is True, report["failed"]
