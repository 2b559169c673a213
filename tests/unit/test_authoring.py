"""Authoring: ``memkg init`` scaffolds a domain that works at once; ``domains`` and ``keys``
say what exists and where it came from; unknown names and misnamed files are explained."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock, ValidationFailed
from memkg.cli import main
from memkg.errors import NotFound

T0 = datetime(2026, 5, 1, 9, tzinfo=UTC)


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    text = out.getvalue()
    return code, json.loads(text) if text.startswith("{") else text


def test_init_makes_a_domain_that_lints_tests_and_decides(tmp_path: Path) -> None:
    root, db = str(tmp_path / "mine"), str(tmp_path / "m.db")
    code, made = cli("init", root, "--domain", "pets")
    assert code == 0 and "schemas/pets/profile@1.json" in made["files"]
    assert cli("--root", root, "--no-examples", "rules", "lint", "--db", db) == (
        0, {"ok": True, "findings": []})  # fmt: skip
    code, tested = cli("rules", "test", "--coverage", "--root", root, "--db", db)
    assert code == 0 and tested["passed"] and tested["cases"] >= 2 + 20  # with the examples'
    config = EngineConfig(roots=(Path(root),))
    with Engine.open(db, config=config, clock=FrozenClock(T0)) as engine:
        engine.ingest(
            {
                "user_id": "u",
                "domain": "pets",
                "key": "pets.favorite",
                "value": "pets_item:basic",
                "source": "dialogue",
                "confidence": 0.9,
            }
        )
        with pytest.raises(ValidationFailed) as refused:  # the shape knows the entities
            engine.ingest({"user_id": "u", "domain": "pets", "key": "pets.favorite",
                           "value": "pets_item:unheard_of", "source": "dialogue"})  # fmt: skip
        assert refused.value.report.codes == ["shacl.violation"]
        assert engine.decide("u", "pets").result.action == "suggest_item"
    code, again = cli("init", root, "--domain", "pets")
    assert code == 1 and again["error"] == "init.exists"
    assert cli("init", root, "--domain", "Pets!")[1]["error"] == "init.name"


def test_domains_and_keys_name_where_each_comes_from(tmp_path: Path) -> None:
    root = str(tmp_path / "mine")
    cli("init", root, "--domain", "pets")
    _, listed = cli("--root", root, "domains")
    by_name = {d["domain"]: d for d in listed["domains"]}
    assert by_name["health"]["root"] == "memkg:examples" and by_name["pets"]["root"] == root
    assert by_name["pets"]["decisions"] == ["suggestion"]
    assert by_name["pets"]["actions"] == ["ask_preference", "suggest_item"]
    _, keys = cli("keys", "pets", "--root", root)
    favorite = next(k for k in keys["keys"] if k["key"] == "pets.favorite")
    assert favorite["file"] == "schemas/pets/profile@1.json" and favorite["entity"] == "PetsItem"
    assert favorite["kind"] == "preference" and favorite["schema"]["type"] == "string"
    code, table = cli("keys", "pets", "--root", root, "--format", "md")
    assert code == 0 and "| `pets.budget` | preference | restricted | yes |" in table


def test_unknown_names_list_the_close_and_the_valid_ones() -> None:
    engine = Engine(config=EngineConfig(shacl=False), clock=FrozenClock(T0))
    with pytest.raises(NotFound) as caught:
        engine.resolve("u", "health", "diet.restriction")
    message = caught.value.message
    assert "did you mean diet.restrictions?" in message and "valid keys: bp.reading" in message
    with pytest.raises(NotFound, match="did you mean health"):
        engine.keys("helth")
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest({"user_id": "u", "domain": "travle", "key": "seat.preference",
                       "value": "window", "source": "dialogue"})  # fmt: skip
    assert "did you mean travel?" in refused.value.report.problems[0].message


def test_misnamed_files_are_reported_not_skipped_silently(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    cli("init", str(root), "--domain", "pets")
    (root / "schemas/pets/profile@1.json").rename(root / "schemas/pets/profile.json")
    (root / "rules/pets/suggestion.yaml").rename(root / "rules/pets/suggestion.yml")
    _, listed = cli("--root", str(root), "domains")
    [pets] = [d for d in listed["domains"] if d["domain"] == "pets"]
    assert pets["keys"] == 0
    assert "profile.json: not read: a key-group file is named <group>@<version>.json" in (
        pets["problems"][0])  # fmt: skip
    assert "suggestion.yml: not read" in pets["problems"][1]
    # the rules they leave broken refuse every decision, which is said after them
    assert all("no decision in any domain" in p for p in pets["problems"][2:])
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    with pytest.raises(ValidationFailed) as refused:
        engine.ingest({"user_id": "u", "domain": "pets", "key": "pets.favorite",
                       "value": "pets_item:basic", "source": "dialogue"})  # fmt: skip
    assert "profile.json: not read" in refused.value.report.problems[0].message


def test_a_rule_file_that_does_not_load_is_listed_and_the_other_domains_still_show(
    tmp_path: Path,
) -> None:
    """One broken file refuses the whole bundle, so every decision fails; ``domains`` showed
    every domain with no actions and no problem, hiding both the cause and what is fine."""
    root = tmp_path / "mine"
    cli("init", str(root), "--domain", "pets")
    (root / "rules/pets/broken.yaml").write_text("rules: [ {bad\n")
    code, listed = cli("--root", str(root), "domains")
    assert code == 0
    by_name = {d["domain"]: d for d in listed["domains"]}
    assert by_name["pets"]["actions"] == ["ask_preference", "suggest_item"]
    assert by_name["health"]["default_decision"] == "triage" and by_name["health"]["actions"]
    for domain in by_name.values():
        [problem] = domain["problems"]
        assert problem.startswith("rules/pets/broken.yaml:2: error rules.yaml: "), problem
        assert "no decision in any domain is made until it is fixed" in problem
