"""Shapes that can never apply, or refuse every value, are reported by ``rules lint`` with file,
line and the name the author likely meant: a target naming no declared key (a typo that turns
a check off), a class no ontology declares (every write of the key refused), a shape on a key
whose values never reach the SHACL graph (literal values: their JSON Schema checks them)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rdflib import Graph

from memkg import Engine, ValidationFailed
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.model.vocab import MK
from memkg.validate.shape_targets import idle_shapes

CONSENT = {"provenance": {"consent_granted": True, "consent_version": "v1",
                          "audit_log_id": "a-1"}}  # fmt: skip


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    text = out.getvalue()
    return code, json.loads(text) if text.startswith("{") else text


def pets_root(tmp_path: Path, old: str = "", new: str = "", extra: str = "") -> Path:
    """A new domain ``pets`` (keys ``pets.favorite``, naming a ``PetsItem``, and the literal
    ``pets.budget``) whose shapes file has ``old`` replaced by ``new`` and ends with ``extra``."""
    root = tmp_path / "mine"
    assert cli("init", str(root), "--domain", "pets")[0] == 0
    shapes = root / "ontology/shapes/pets.ttl"
    shapes.write_text(shapes.read_text().replace(old, new) + extra)
    return root


def line_of(root: Path, text: str) -> int:
    rows = (root / "ontology/shapes/pets.ttl").read_text().splitlines()
    return next(n for n, row in enumerate(rows, 1) if text in row)


def lint(root: Path) -> tuple[int, list[dict[str, Any]]]:
    code, report = cli("--root", str(root), "rules", "lint")
    return code, report["findings"]


def test_a_typo_in_a_shape_target_is_reported_with_the_key_meant(tmp_path: Path) -> None:
    """The misspelt shape never applies, so the check it was written for is off: an entity no
    ontology knows is then stored."""
    root = pets_root(tmp_path, "sh:targetSubjectsOf key:pets.favorite",
                     "sh:targetSubjectsOf key:pets.favorit")  # fmt: skip
    bogus = {"user_id": "li", "domain": "pets", "key": "pets.favorite",
             "value": "pets_item:bogus", "source": "profile", "confidence": 0.9}  # fmt: skip
    assert Engine(config=EngineConfig(roots=(root,))).ingest(bogus).status.value == "active"
    code, findings = lint(root)
    assert code == 0  # a warning: see test_a_root_replacing_an_example_domain_still_lints
    [found] = findings
    assert (found["code"], found["severity"]) == ("shacl.unknown_key", "warning")
    assert found["file"] == "ontology/shapes/pets.ttl"
    assert found["line"] == line_of(root, "key:pets.favorit ;")
    assert "pets.favorit" in found["message"] and "did you mean pets.favorite" in found["message"]
    assert "never applies" in found["message"]


def test_a_path_naming_no_declared_key_is_reported(tmp_path: Path) -> None:
    """A property shape whose path names no key finds no value, so it checks nothing."""
    root = pets_root(tmp_path, "sh:path key:pets.favorite", "sh:path key:pets.favourite")
    [found] = lint(root)[1]
    assert found["code"] == "shacl.unknown_key" and "sh:path" in found["message"]
    assert found["line"] == line_of(root, "key:pets.favourite")


def test_a_class_no_ontology_declares_is_an_error(tmp_path: Path) -> None:
    """Nothing is of that class, so every write of the key would be refused."""
    root = pets_root(tmp_path, "sh:class mk:PetsItem", "sh:class mk:PetsIten")
    good = {"user_id": "li", "domain": "pets", "key": "pets.favorite",
            "value": "pets_item:basic", "source": "profile", "confidence": 0.9}  # fmt: skip
    with pytest.raises(ValidationFailed) as refused:
        Engine(config=EngineConfig(roots=(root,))).ingest(good)
    assert refused.value.report.codes == ["shacl.violation"]
    code, findings = lint(root)
    assert code == 1
    [found] = findings
    assert (found["code"], found["severity"]) == ("shacl.unknown_class", "error")
    assert found["line"] == line_of(root, "mk:PetsIten")
    assert "mk:PetsIten" in found["message"] and "did you mean mk:PetsItem" in found["message"]


def test_a_shape_on_a_key_with_literal_values_is_reported(tmp_path: Path) -> None:
    """Only values that name entities reach the SHACL graph: this shape is never checked."""
    root = pets_root(
        tmp_path,
        extra="""
shape:BudgetShape a sh:NodeShape ;
    sh:targetSubjectsOf key:pets.budget ;
    sh:property [ sh:path key:pets.budget ; sh:maxCount 1 ] .
""",
    )
    [found] = lint(root)[1]
    assert (found["code"], found["severity"]) == ("shacl.literal_key", "warning")
    assert found["line"] == line_of(root, "sh:targetSubjectsOf key:pets.budget")
    assert "JSON Schema" in found["message"] and "schemas/pets/profile@1.json" in found["message"]


def test_the_shipped_shapes_and_a_new_domain_lint_clean(tmp_path: Path) -> None:
    """Valid shapes raise nothing: a finding on them would teach authors to ignore lint."""
    assert cli("rules", "lint") == (0, {"ok": True, "findings": []})
    root = pets_root(tmp_path)
    assert lint(root) == (0, [])


def test_a_root_replacing_an_example_domain_still_lints(tmp_path: Path) -> None:
    """The examples' shapes for the keys the replaced domain no longer declares never apply:
    said as warnings, since the author may not own that file."""
    root = tmp_path / "mine"
    cli("init", str(root), "--domain", "travel")
    code, findings = lint(root)
    assert code == 0 and findings
    assert {(f["code"], f["severity"], f["file"]) for f in findings} == {
        ("shacl.unknown_key", "warning", "ontology/shapes/keys.ttl")
    }


def test_a_javascript_constraint_is_reported() -> None:
    """memkg runs no JavaScript: the constraint would silently check nothing."""
    shapes = Graph().parse(
        format="turtle",
        data="""
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix mk: <https://memkg.dev/ns#> .
@prefix shape: <https://memkg.dev/shape/> .
shape:Js a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:js [ sh:jsFunctionName "check" ; sh:jsLibrary [ sh:jsLibraryURL "http://e/l.js" ] ] .
""",
    )
    [flaw] = idle_shapes(shapes, [], {MK.Fact})
    assert (flaw.code, flaw.severity) == ("shacl.javascript", "warning")


def test_the_warnings_do_not_refuse_the_rules(tmp_path: Path) -> None:
    """A shape that never applies refuses nothing, so decisions go on as before."""
    root = pets_root(tmp_path, "key:pets.favorite ;", "key:pets.favorit ;")
    engine = Engine(config=EngineConfig(roots=(root,)))
    assert engine.intent.load().bundle.tables
    assert all(d["problems"] == [] for d in cli("--root", str(root), "domains")[1]["domains"])
