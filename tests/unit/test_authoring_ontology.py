"""A Turtle file in force that does not parse is reported by ``rules lint`` and ``domains``,
naming the file, before every write in every domain is refused for it."""

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


def broken_root(tmp_path: Path) -> str:
    root = str(tmp_path / "mine")
    assert cli("init", root, "--domain", "pets")[0] == 0
    shapes = Path(root, "ontology/shapes/pets.ttl")
    shapes.write_text(shapes.read_text() + "this is not turtle\n")
    return root


def test_lint_reports_a_shapes_file_that_does_not_parse(tmp_path: Path) -> None:
    root = broken_root(tmp_path)
    code, report = cli("--root", root, "rules", "lint")
    assert code == 1 and report["ok"] is False
    [found] = [f for f in report["findings"] if f["code"] == "ontology.parse"]
    assert found["file"] == "ontology/shapes/pets.ttl" and found["line"] > 1
    assert "cannot parse Turtle" in found["message"]


def test_domains_reports_it_for_every_domain(tmp_path: Path) -> None:
    root = broken_root(tmp_path)
    code, listed = cli("--root", root, "domains")
    assert code == 0
    for domain in listed["domains"]:
        assert any(p.startswith("ontology/shapes/pets.ttl: ") for p in domain["problems"]), domain


def test_a_clean_root_has_no_ontology_findings(tmp_path: Path) -> None:
    root = str(tmp_path / "mine")
    cli("init", root, "--domain", "pets")
    assert cli("--root", root, "rules", "lint") == (0, {"ok": True, "findings": []})
    assert all(d["problems"] == [] for d in cli("--root", root, "domains")[1]["domains"])


def test_the_engine_refuses_the_rules_as_lint_does(tmp_path: Path) -> None:
    """Lint and the engine starting agree: the rule bundle is refused, naming the file (a
    reload checks the graphs the engine loaded: it never reads the ontology again)."""
    from memkg import Engine
    from memkg.config import EngineConfig
    from memkg.engine.rule_bundle import RulesRefused

    root = broken_root(tmp_path)
    config = EngineConfig(roots=(Path(root),), examples=False, shacl=False)
    with pytest.raises(RulesRefused) as refused:
        Engine(config=config).intent.load()  # as on first use
    [found] = refused.value.findings
    assert (found.code, found.file) == ("ontology.parse", "ontology/shapes/pets.ttl")
    assert found.line > 1
