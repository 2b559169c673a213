"""``schema history`` reads key-group files and ``RELEASED.json`` as the registry does."""

from __future__ import annotations

from pathlib import Path

import pytest

from memkg.errors import ConfigError
from memkg.evolution.history import read_manifest, schema_history


def test_a_deeply_nested_group_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "schemas" / "pets").mkdir(parents=True)
    (tmp_path / "schemas" / "pets" / "pet@1.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError) as caught:
        schema_history(tmp_path, "pets")
    assert caught.value.message.startswith("schemas/pets/pet@1.json: nested more than")


def test_a_manifest_with_a_duplicate_entry_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "RELEASED.json").write_text('{\n"a": "1",\n"a": "2"\n}')
    with pytest.raises(ConfigError) as caught:
        read_manifest(tmp_path)
    assert caught.value.message.startswith("schemas/RELEASED.json:3: key 'a' appears twice")
