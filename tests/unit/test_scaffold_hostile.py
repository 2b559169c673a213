"""``memkg init`` writes only names a write can use, and only inside the folder it is given."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.cli import main
from memkg.errors import ConfigError
from memkg.scaffold import init_root


@pytest.mark.parametrize("name", ["a" * 33, "a" * 40, "pets\n", "pets\n/../x"])
def test_a_name_no_observation_can_use_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        init_root(tmp_path, name)
    assert caught.value.code == "init.name" and "at most 32" in caught.value.message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["shop2", "a" * 28])
def test_a_name_that_makes_no_entity_type_is_refused(tmp_path: Path, name: str) -> None:
    """Its entities would be <name>_item:...: a type of letters and _, at most 32."""
    with pytest.raises(ConfigError) as caught:
        init_root(tmp_path, name)
    assert caught.value.code == "init.name" and "no entity type" in caught.value.message
    assert list(tmp_path.iterdir()) == []


def test_the_longest_name_allowed_makes_a_domain_that_stores_and_passes_its_cases(
    tmp_path: Path,
) -> None:
    name = "a" * 27
    init_root(tmp_path, name)
    out = io.StringIO()
    assert main(["--root", str(tmp_path), "--no-examples", "rules", "test"], out) == 0
    assert json.loads(out.getvalue())["passed"] is True
    config = EngineConfig(roots=(tmp_path,), examples=False)
    engine = Engine(config=config, clock=FrozenClock(datetime(2026, 5, 1, tzinfo=UTC)))
    engine.ingest({"user_id": "u", "domain": name, "key": f"{name}.budget", "value": 3,
                   "source": "dialogue", "provenance": {"consent_granted": True}})  # fmt: skip
    assert [f.value for f in engine.facts("u", domain=name)] == [3]


def test_a_dangling_link_in_the_folder_is_not_written_through(tmp_path: Path) -> None:
    root = tmp_path / "root"
    target = root / "gone.ttl"  # inside the folder, but missing
    (root / "ontology" / "domains").mkdir(parents=True)
    os.symlink(target, root / "ontology" / "domains" / "pets.ttl")
    with pytest.raises(ConfigError) as caught:
        init_root(root, "pets")
    assert caught.value.code == "init.exists"
    assert "ontology/domains/pets.ttl" in caught.value.message
    assert not target.exists()


def test_a_linked_folder_leading_outside_is_not_written_into(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "rules")
    with pytest.raises(ConfigError) as caught:
        init_root(root, "pets")
    assert caught.value.code == "config.outside_root"
    assert list(outside.iterdir()) == [] and not (root / "schemas").exists()


def test_links_elsewhere_in_the_folder_are_none_of_its_business(tmp_path: Path) -> None:
    """A project folder with a virtualenv (links to the system's Python) takes a domain."""
    root = tmp_path / "project"
    (root / ".venv" / "bin").mkdir(parents=True)
    os.symlink("/usr/bin/env", root / ".venv" / "bin" / "python")
    os.symlink(tmp_path, root / "up")
    assert "rules/pets/domain.yaml" in init_root(root, "pets")


def test_a_file_given_as_the_folder_is_refused_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Swapping the arguments (a data file for the folder) printed a traceback, not the JSON
    error every other command prints, and exit status 1."""
    data = tmp_path / "obs.jsonl"
    data.write_text("{}\n")
    for folder in (data, data / "sub"):
        out = io.StringIO()
        assert main(["init", str(folder), "--domain", "abc"], out) == 1
        error = json.loads(out.getvalue())
        assert error["error"] == "init.not_folder" and str(data) in error["message"]
        assert "Traceback" not in capsys.readouterr().err
    assert data.read_text() == "{}\n"


def test_a_folder_that_cannot_be_written_is_refused_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the right to write there, init says so, naming the file it could not write."""

    def refused(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refused)  # as a read-only folder does, even for root
    out = io.StringIO()
    assert main(["init", str(tmp_path / "root"), "--domain", "abc"], out) == 1
    error = json.loads(out.getvalue())
    assert error["error"] == "init.write" and "Permission denied" in error["message"]
    assert error["message"].startswith(f"{tmp_path / 'root'}: cannot write ")
    assert "Traceback" not in capsys.readouterr().err
