"""A user schema's ``$ref`` must resolve inside it: refused when the schema loads, never fetched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.errors import ConfigError
from memkg.rules.loader import load_bundle
from memkg.scaffold import files_for
from memkg.validate.registry import SchemaRegistry
from support.observations import T0

OUTSIDE = ["http://example.com/x.json", "file:///etc/passwd", "other.json#/a", "#/$defs/missing",
           "#nowhere"]  # fmt: skip

SOURCE = "dialogue"


def _schemas(tmp_path: Path, key_schema: dict[str, Any]) -> Path:
    folder = tmp_path / "schemas" / "demo"
    folder.mkdir(parents=True)
    doc = json.loads(files_for("demo")["schemas/demo/profile@1.json"])
    doc["properties"]["demo.x"] = {
        **key_schema,
        "x-memkg": {"kind": "preference", "sensitivity": "public"},
    }
    (folder / "profile@1.json").write_text(json.dumps(doc))
    return tmp_path / "schemas"


@pytest.mark.parametrize("ref", OUTSIDE)
def test_a_key_schema_ref_that_does_not_resolve_inside_is_refused_at_load(
    tmp_path: Path, ref: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        SchemaRegistry(_schemas(tmp_path, {"$ref": ref}))
    assert refused.value.code == "schema.invalid"
    message = refused.value.message
    assert message.startswith("schemas/demo/profile@1.json: key 'demo.x': /$ref: ")
    assert ref in message and "$defs" in message


def test_a_ref_loop_is_refused_at_load(tmp_path: Path) -> None:
    schema = {"$ref": "#/$defs/a", "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}}
    with pytest.raises(ConfigError) as refused:
        SchemaRegistry(_schemas(tmp_path, schema))
    assert refused.value.code == "schema.invalid" and "loops" in refused.value.message


def test_refs_inside_the_key_schema_work(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/word"},
              "b": {"$ref": "#w"}, "c": {"type": "array", "items": {"$ref": "#"}}},
              "$defs": {"word": {"type": "string", "$anchor": "w"}}}  # fmt: skip
    spec = SchemaRegistry(_schemas(tmp_path, schema)).spec("demo", "demo.x")
    assert spec is not None
    assert spec.validator.is_valid({"a": "x", "b": "y", "c": [{"a": "z"}]})
    assert [e.validator for e in spec.validator.iter_errors({"a": 1, "c": [{"b": 2}]})] == [
        "type", "type"]  # fmt: skip


def test_the_engine_refuses_the_schema_before_any_ingest(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for rel, text in files_for("demo").items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _schemas(tmp_path / "other", {"$ref": "file:///etc/passwd"})
    (root / "schemas/demo/profile@1.json").write_text(
        (tmp_path / "other/schemas/demo/profile@1.json").read_text()
    )
    with pytest.raises(ConfigError) as refused:
        Engine(config=EngineConfig(roots=(root,), examples=False), clock=FrozenClock(T0)).ingest(
            {"user_id": "u", "domain": "demo", "key": "demo.x", "value": "v", "source": SOURCE}
        )
    assert refused.value.code == "schema.invalid"


@pytest.mark.parametrize("where", ["context", "parameter"])
@pytest.mark.parametrize("ref", ["http://example.com/x.json", "#/$defs/missing"])
def test_domain_file_schemas_refuse_refs_that_leave_them(where: str, ref: str) -> None:
    context = f'{{$ref: "{ref}"}}'
    if where == "context":
        domain = f"actions: {{go: {{description: go}}}}\ncontext:\n  occasion: {context}\n"
    else:
        domain = f"actions:\n  go: {{description: go, parameters: {{item: {context}}}}}\n"
    sources = {"health/domain.yaml": domain,
               "health/t.yaml": "hit_policy: first\nallow_no_match: true\nrules: []\n"}  # fmt: skip
    _, findings = load_bundle(sources)
    [finding] = [f for f in findings if f.code == "rule.schema"]
    assert finding.file == "rules/health/domain.yaml" and ref in finding.message
    assert "$ref" in finding.message and "$defs" in finding.message
