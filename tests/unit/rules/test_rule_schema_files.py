"""A root's own ``schemas/rules/*.schema.json`` is a file a user wrote: read like one.

Its references never reach the network, its patterns run under the time limit, and a broken
file is a ``ConfigError`` naming it, never a crash inside jsonschema.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg.errors import ConfigError
from memkg.roots import builtin
from memkg.rules.loader import load_bundle

SOURCES = {
    "health/domain.yaml": "actions: {go: {description: go}}\n",
    "health/t.yaml": "hit_policy: first\nallow_no_match: true\nrules: []\n",
}


def root_with(tmp_path: Path, name: str, text: str) -> Path:
    shutil.copytree(builtin("core") / "schemas" / "rules", tmp_path / "schemas" / "rules")
    (tmp_path / "schemas" / "rules" / f"{name}.schema.json").write_text(text)
    return tmp_path


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A real TCP listener on loopback that records every connection made to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except OSError:
                continue
            accepted.append(peer)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def test_a_remote_ref_is_refused_and_never_fetched(
    tmp_path: Path, listener: tuple[int, list[object]]
) -> None:
    port, accepted = listener
    schema = {"$ref": f"http://127.0.0.1:{port}/rule-file.json"}
    root = root_with(tmp_path, "rule-file", json.dumps(schema))
    with pytest.raises(ConfigError) as caught:
        load_bundle(SOURCES, root=root)
    assert caught.value.code == "rules.schema_invalid"
    assert "schemas/rules/rule-file.schema.json" in caught.value.message
    assert "nothing is fetched" in caught.value.message
    assert accepted == []


def test_a_broken_schema_file_is_a_config_error(tmp_path: Path) -> None:
    root = root_with(tmp_path, "rule-file", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError) as caught:
        load_bundle(SOURCES, root=root)
    assert "schemas/rules/rule-file.schema.json" in caught.value.message
    assert "nested more than" in caught.value.message


def test_a_schema_that_is_not_a_json_schema_is_a_config_error(tmp_path: Path) -> None:
    root = root_with(tmp_path, "rule-file", json.dumps({"type": 12}))
    with pytest.raises(ConfigError) as caught:
        load_bundle(SOURCES, root=root)
    assert caught.value.code == "rules.schema_invalid"
    assert "not a valid JSON Schema" in caught.value.message


def test_a_backtracking_pattern_is_stopped_and_reported(tmp_path: Path) -> None:
    schema = {"properties": {"description": {"pattern": "(a|aa)+$"}}}
    root = root_with(tmp_path, "rule-file", json.dumps(schema))
    sources = {**SOURCES, "health/t.yaml": SOURCES["health/t.yaml"]
               + "description: " + "a" * 60 + "!\n"}  # fmt: skip
    _, findings = load_bundle(sources, root=root)
    assert [f.code for f in findings] == ["rule.schema"]
    assert findings[0].message.startswith("schema.pattern_timeout: ")
