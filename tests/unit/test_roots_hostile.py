"""Roots as a careless author or an attacker lays them out: memkg reads nothing outside its
roots, and a folder no domain could be named after is an error, not a domain."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memkg.errors import ConfigError
from memkg.roots import Roots
from memkg.rules.loader import read_sources, rule_domains
from memkg.validate.registry import SchemaRegistry

KIND = {"type": "string", "x-memkg": {"kind": "preference"}}
PET = {"x-memkg": {"version": 1}, "properties": {"pet.kind": KIND}}
DOMAIN = "description: Pets.\nactions:\n  greet: {description: Say hello}\n"


def pets_root(folder: Path) -> Path:
    (folder / "schemas" / "pets").mkdir(parents=True)
    (folder / "schemas" / "pets" / "pet@1.json").write_text(json.dumps(PET), encoding="utf-8")
    (folder / "rules" / "pets").mkdir(parents=True)
    (folder / "rules" / "pets" / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the root, holding what a link might point at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "domain.yaml").write_text(DOMAIN, encoding="utf-8")
    (folder / "secret.yaml").write_text("hit_policy: first\nrules: []\n", encoding="utf-8")
    (folder / "pet@1.json").write_text(json.dumps(PET), encoding="utf-8")
    (folder / "x.ttl").write_text("<http://e/a> <http://e/p> <http://e/b> .\n")
    return folder


def refused(roots: Roots, code: str = "config.outside_root") -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        roots.domains()
    assert caught.value.code == code, caught.value.message
    return caught.value


def test_a_domain_folder_linked_outside_the_root_is_refused(tmp_path: Path, outside: Path) -> None:
    root = pets_root(tmp_path / "root")
    os.symlink(outside, root / "rules" / "linked")
    error = refused(Roots.of((root,), examples=False))
    assert "rules/linked" in error.message and str(outside) in error.message
    assert "copy" in error.message


@pytest.mark.parametrize(
    ("where", "target"),
    [
        ("rules/pets/secret.yaml", "secret.yaml"),
        ("schemas/pets/pet@2.json", "pet@1.json"),
        ("ontology/domains/x.ttl", "x.ttl"),
    ],
)
def test_a_file_linked_outside_the_root_is_refused(
    tmp_path: Path, outside: Path, where: str, target: str
) -> None:
    root = pets_root(tmp_path / "root")
    (root / where).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / target, root / where)
    layers = Roots.of((root,), examples=False)
    error = refused(layers)
    assert where in error.message
    with pytest.raises(ConfigError):
        layers.files("ontology/domains")


def test_a_link_that_stays_inside_the_root_is_read(tmp_path: Path) -> None:
    root = pets_root(tmp_path / "root")
    (root / "shared").mkdir()
    (root / "shared" / "t.yaml").write_text("hit_policy: first\nallow_no_match: true\nrules: []\n")
    os.symlink(root / "shared" / "t.yaml", root / "rules" / "pets" / "t.yaml")
    layers = Roots.of((root,), examples=False)
    assert sorted(read_sources(layers.rule_dirs())) == ["pets/domain.yaml", "pets/t.yaml"]


def test_a_rules_folder_given_directly_is_held_to_itself(tmp_path: Path, outside: Path) -> None:
    root = pets_root(tmp_path / "root")
    os.symlink(outside / "secret.yaml", root / "rules" / "pets" / "secret.yaml")
    with pytest.raises(ConfigError) as caught:
        read_sources(root / "rules")
    assert caught.value.code == "config.outside_root"
    with pytest.raises(ConfigError):
        rule_domains(root / "rules")
    os.symlink(outside, root / "schemas" / "linked")
    with pytest.raises(ConfigError) as caught:
        SchemaRegistry(root / "schemas")
    assert caught.value.code == "config.outside_root"


@pytest.mark.parametrize("name", ["pets.bak", "Über", "My Pets", "a" * 33, "2pets"])
def test_a_folder_no_domain_can_be_named_after_is_refused(tmp_path: Path, name: str) -> None:
    root = pets_root(tmp_path / "root")
    (root / "rules" / name).mkdir()
    error = refused(Roots.of((root,), examples=False), "config.domain_name")
    assert f"rules/{name}" in error.message and "rename" in error.message


@pytest.mark.parametrize("name", [".git", "_drafts"])
def test_hidden_folders_are_left_out(tmp_path: Path, name: str) -> None:
    root = pets_root(tmp_path / "root")
    (root / "rules" / name).mkdir()
    (root / "schemas" / name).mkdir()
    assert sorted(Roots.of((root,), examples=False).domains()) == ["pets"]


def test_a_top_folder_linked_outside_the_root_is_refused(tmp_path: Path, outside: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (outside / "domains").mkdir()
    os.symlink(outside, root / "ontology")
    with pytest.raises(ConfigError) as caught:
        Roots.of((root,), examples=False).files("ontology/domains")
    assert caught.value.code == "config.outside_root" and "/ontology" in caught.value.message


def test_a_loop_of_links_ends(tmp_path: Path) -> None:
    root = pets_root(tmp_path / "root")
    os.symlink(root / "rules", root / "rules" / "pets" / "_loop")
    assert sorted(Roots.of((root,), examples=False).domains()) == ["pets"]


def test_a_link_from_one_root_into_another_stays_inside_the_roots(
    tmp_path: Path, outside: Path
) -> None:
    shared = pets_root(tmp_path / "shared")
    (shared / "ontology" / "domains").mkdir(parents=True)
    (shared / "ontology" / "domains" / "x.ttl").write_text((outside / "x.ttl").read_text())
    mine = tmp_path / "mine"
    (mine / "ontology" / "domains").mkdir(parents=True)
    os.symlink(shared / "ontology" / "domains" / "x.ttl", mine / "ontology/domains/common.ttl")
    layers = Roots.of((shared, mine), examples=False)
    assert "pets" in layers.domains()
    assert "common.ttl" in layers.files("ontology/domains")
    with pytest.raises(ConfigError):  # the same link, with the root it points into not given
        Roots.of((mine,), examples=False).domains()
