"""Layered roots: built-in core, the example domains, then user roots that add or replace."""

from __future__ import annotations

import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.cli import main
from memkg.errors import ConfigError
from memkg.roots import Roots, builtin

PET = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "x-memkg": {"domain": "pets", "group": "pet", "version": 1},
    "type": "object",
    "properties": {
        "pet.kind": {"type": "string", "enum": ["cat", "dog"],
                     "x-memkg": {"kind": "preference"}},
    },
}  # fmt: skip
T0 = datetime(2026, 5, 1, 9, tzinfo=UTC)
DOMAIN = "description: Pets.\nactions:\n  greet: {description: Say hello}\n"


def pets_root(folder: Path) -> Path:
    (folder / "schemas" / "pets").mkdir(parents=True)
    (folder / "schemas" / "pets" / "pet@1.json").write_text(json.dumps(PET), encoding="utf-8")
    (folder / "rules" / "pets").mkdir(parents=True)
    (folder / "rules" / "pets" / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    return folder


def test_the_core_is_always_there_and_the_examples_can_be_left_out() -> None:
    assert sorted(Roots.of().domains()) == ["commerce", "finance", "health", "travel"]
    bare = Roots.of(examples=False)
    assert bare.domains() == {} and bare.paths == (builtin("core"),)
    assert bare.file("ontology/memkg.ttl") == builtin("core") / "ontology/memkg.ttl"
    assert bare.file("schemas/rules/rule-file.schema.json") is not None


def test_a_user_root_adds_a_domain_beside_the_examples(tmp_path: Path) -> None:
    root = pets_root(tmp_path)
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    assert engine.layers.domains()["pets"] == root
    assert "pets" in engine.registry.domains() and "health" in engine.registry.domains()
    engine.ingest({"user_id": "u", "domain": "pets", "key": "pet.kind", "value": "cat",
                   "source": "dialogue"})  # fmt: skip
    assert [f.value for f in engine.facts("u", domain="pets")] == ["cat"]
    assert engine.registry.spec("pets", "pet.kind").source_file == "schemas/pets/pet@1.json"  # type: ignore[union-attr]


def test_a_user_root_replaces_an_example_domain_whole(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    (root / "schemas").mkdir(parents=True)
    shutil.copytree(builtin("examples") / "schemas" / "travel", root / "schemas" / "travel")
    (root / "schemas" / "travel" / "flight@1.json").unlink()
    layers = EngineConfig(roots=(root,)).layers
    assert layers.domains()["travel"] == root
    assert layers.rule_dirs().get("travel") is None  # the example travel rules went with it
    engine = Engine(config=EngineConfig(roots=(root,), shacl=False), clock=FrozenClock(T0))
    assert "location.city" in engine.registry.keys("travel")
    assert "airline.preferred" not in engine.registry.keys("travel")


def test_a_missing_root_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        EngineConfig(roots=(tmp_path / "nowhere",)).layers  # noqa: B018
    assert caught.value.code == "config.root_missing"


def _cli(*argv: str) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, json.loads(out.getvalue().splitlines()[0])


def test_root_and_no_examples_are_accepted_before_and_after_the_command(tmp_path: Path) -> None:
    pets, other = pets_root(tmp_path / "a"), pets_root(tmp_path / "b")
    (other / "schemas" / "pets").rename(other / "schemas" / "birds")
    (other / "rules" / "pets").rename(other / "rules" / "birds")
    db = str(tmp_path / "m.db")
    code, report = _cli("--root", str(pets), "rules", "lint", "--db", db, "--root", str(other),
                        "--no-examples")  # fmt: skip
    assert code == 0, report
    _, report = _cli("--db", db, "--no-examples", "decide", "u", "--domain", "health")
    assert report["error"] == "domain.unknown"  # no example declares it
    _, report = _cli("--db", db, "decide", "u", "--domain", "pets", "--root", str(pets))
    assert report["problems"] == ["domain 'pets' has no default decision; decisions: []"]
