"""A table durable-rules refuses for a reason lint does not predict refuses the whole bundle,
at startup and on reload, naming the table: it never goes live to fail its own decisions.

The construct: a ``match`` joining ten fields of another fact. Each join is two expressions of
one beta node and the C core holds fewer than 32 (``MAX_SEQUENCE_EXPRESSIONS``): it refuses the
ruleset with error code 113 (``ERR_EXPRESSION_LIMIT_EXCEEDED``), which capacity lint does not
model.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.engine.rule_bundle import RulesRefused

FIELDS = [f"f{i}" for i in range(10)]
JOINED = f"""\
description: Ten fields of one fact joined to another's.
hit_policy: first
allow_no_match: true
rules:
  - id: pets.ten_fields
    when:
      - fact: {{key: pets.a, as: a}}
      - fact: {{key: pets.b, match: {{{", ".join(f"{f}: $a.{f}" for f in FIELDS)}}}}}
    then: {{action: ask_preference}}
    reason_code: JOINED
    explain: x
"""


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, json.loads(out.getvalue())


def pets_root(tmp_path: Path) -> Path:
    root = tmp_path / "mine"
    assert cli("init", str(root), "--domain", "pets")[0] == 0
    schema_file = root / "schemas/pets/profile@1.json"
    schema = json.loads(schema_file.read_text())
    for key in ("pets.a", "pets.b"):
        schema["properties"][key] = {
            "type": "object",
            "properties": {f: {"type": "integer"} for f in FIELDS},
            "x-memkg": {"kind": "preference", "sensitivity": "public"},
        }
    schema_file.write_text(json.dumps(schema, indent=2))
    return root


def engine(root: Path) -> Engine:
    return Engine(config=EngineConfig(roots=(root,), examples=False, shacl=False))


def test_startup_refuses_a_bundle_holding_a_table_durable_rules_refuses(tmp_path: Path) -> None:
    root = pets_root(tmp_path)
    (root / "rules/pets/joined.yaml").write_text(JOINED)
    with pytest.raises(RulesRefused) as refused:
        engine(root).intent.load()  # as on first use
    [found] = refused.value.findings
    assert (found.code, found.file, found.severity) == (
        "rules.compile",
        "rules/pets/joined.yaml",
        "error",
    )
    assert "pets/joined" in found.message and "113" in found.message


def test_reload_refuses_it_and_the_rules_in_use_stay(tmp_path: Path) -> None:
    root = pets_root(tmp_path)
    e = engine(root)
    old = e.intent.rules.digest
    (root / "rules/pets/joined.yaml").write_text(JOINED)
    with pytest.raises(RulesRefused) as refused:
        e.reload_rules(root / "rules")
    assert [f.code for f in refused.value.findings] == ["rules.compile"]
    assert e.intent.rules.digest == old


def test_a_table_past_the_known_limits_is_refused_by_lint_before_durable_rules_sees_it(
    tmp_path: Path,
) -> None:
    root = pets_root(tmp_path)
    rules = "".join(
        f"  - id: pets.r{i}\n    when:\n      - fact: {{key: pets.budget, gt: {i}}}\n"
        "    then: {action: ask_preference}\n    reason_code: R\n    explain: x\n"
        for i in range(300)
    )
    big = "description: big\nhit_policy: first\nallow_no_match: true\nrules:\n" + rules
    (root / "rules/pets/big.yaml").write_text(big)
    with pytest.raises(RulesRefused) as refused:
        engine(root).intent.load()  # as on first use
    assert {f.code for f in refused.value.findings} == {"rule.durable_limit"}
