"""Shapes pySHACL cannot run (a SPARQL query that does not parse, one that would reach the
network, a constraint it cannot load) are found when the shapes load: ``rules lint`` names the
file and line, and the engine refuses every write with a ``ConfigError``, never a traceback,
storing nothing. Shapes apply to every fact, so one broken shape stops every domain's writes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rdflib import Graph

from memkg import Engine
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.engine.rule_bundle import RulesRefused
from memkg.errors import ConfigError
from memkg.ontology import Ontology
from memkg.roots import Roots, builtin
from memkg.validate import shacl
from memkg.validate.shape_lint import broken_shapes

PREFIXES = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix mk: <https://memkg.dev/ns#> .
@prefix shape: <https://memkg.dev/shape/> .
"""
NOT_SPARQL = """
shape:AnyFactSparql a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:sparql [ sh:message "m" ; sh:select \"\"\"SELECT $this WHERE { this is not sparql\"\"\" ] .
"""
TRAVEL = {"user_id": "li", "domain": "travel", "key": "airline.avoided", "value": ["airline:MU"],
          "source": "dialogue", "confidence": 0.9}  # fmt: skip


def cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    text = out.getvalue()
    return code, json.loads(text) if text.startswith("{") else text


def root_with(tmp_path: Path, shape: str) -> Path:
    """A new domain ``pets`` whose shapes file ends with ``shape``."""
    root = tmp_path / "mine"
    assert cli("init", str(root), "--domain", "pets")[0] == 0
    shapes = root / "ontology/shapes/pets.ttl"
    shapes.write_text(shapes.read_text() + shape)
    return root


def line_of(root: Path, text: str) -> int:
    rows = (root / "ontology/shapes/pets.ttl").read_text().splitlines()
    return next(n for n, row in enumerate(rows, 1) if text in row)


def shapes_of(text: str) -> Graph:
    return Graph().parse(data=PREFIXES + text, format="turtle")


def test_lint_reports_a_sparql_constraint_that_does_not_parse(tmp_path: Path) -> None:
    """Lint passed it, and then every write crashed: lint must say what the writes would meet."""
    root = root_with(tmp_path, NOT_SPARQL)
    code, report = cli("--root", str(root), "rules", "lint")
    assert code == 1 and report["ok"] is False
    [found] = report["findings"]
    assert (found["code"], found["severity"]) == ("shacl.sparql", "error")
    assert found["file"] == "ontology/shapes/pets.ttl"
    assert found["line"] == line_of(root, "this is not sparql")
    assert "shape:AnyFactSparql" in found["message"] and "does not parse" in found["message"]


@pytest.mark.parametrize("domain", ["travel", "pets"])
def test_a_write_in_any_domain_is_refused_with_a_config_error_and_nothing_is_stored(
    tmp_path: Path, domain: str
) -> None:
    """Shapes apply to every fact: a broken one refuses every domain's writes, saying where
    and how to fix it, and the store keeps what it had."""
    root = root_with(tmp_path, NOT_SPARQL)
    engine = Engine(config=EngineConfig(roots=(root,)))
    fact = TRAVEL if domain == "travel" else {
        **TRAVEL, "domain": "pets", "key": "pets.favorite", "value": "pets_item:basic"}  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        engine.ingest(fact)
    assert refused.value.code == "shacl.sparql"
    message = refused.value.message
    assert f"ontology/shapes/pets.ttl:{line_of(root, 'this is not sparql')}" in message
    assert "shape:AnyFactSparql" in message and "rules lint" in message
    assert engine.facts("li") == [] and engine.version("li") == 0


def test_the_cli_prints_the_error_for_ingest_and_rules_test(tmp_path: Path) -> None:
    """The shell gets the same JSON error an API client gets, not a pyparsing traceback."""
    root = root_with(tmp_path, NOT_SPARQL)
    observations = tmp_path / "obs.jsonl"
    observations.write_text(json.dumps(TRAVEL) + "\n")
    db = str(tmp_path / "memkg.db")
    code, out = cli("--root", str(root), "--db", db, "ingest", str(observations))
    assert code != 0 and out["error"] == "shacl.sparql", out
    code, out = cli("--root", str(root), "rules", "test")
    assert code != 0 and out["error"] == "shacl.sparql", out
    assert "ontology/shapes/pets.ttl:" in out["message"]


def test_the_engine_refuses_the_rules_as_lint_does(tmp_path: Path) -> None:
    """Decisions and a service's readiness load the rules: they stop on it as lint does."""
    root = root_with(tmp_path, NOT_SPARQL)
    with pytest.raises(RulesRefused) as refused:
        Engine(config=EngineConfig(roots=(root,), shacl=False)).intent.load()
    [found] = refused.value.findings
    assert (found.code, found.file) == ("shacl.sparql", "ontology/shapes/pets.ttl")


def test_domains_lists_the_broken_shape_for_every_domain(tmp_path: Path) -> None:
    """Whoever looks at any domain learns why its writes are refused."""
    root = root_with(tmp_path, NOT_SPARQL)
    code, listed = cli("--root", str(root), "domains")
    assert code == 0
    for domain in listed["domains"]:
        assert any(p.startswith("ontology/shapes/pets.ttl: ") for p in domain["problems"])


FEDERATED = {
    "service": "SELECT $this WHERE { SERVICE <http://example.org/sparql> { $this ?p ?o } }",
    "service_silent": "SELECT $this WHERE { service silent <http://example.org/q> { ?s ?p ?o } }",
    "service_variable": "SELECT $this WHERE { ?where ?p ?o . SERVICE ?where { ?s ?p ?o } }",
    "from": "SELECT $this FROM <http://example.org/g> WHERE { $this ?p ?o }",
    "from_named": "SELECT $this FROM NAMED <http://example.org/g> WHERE { $this ?p ?o }",
}


@pytest.mark.parametrize("query", FEDERATED.values(), ids=FEDERATED.keys())
def test_a_query_that_would_reach_the_network_is_refused(query: str) -> None:
    """memkg never makes a network request on behalf of a shape."""
    shapes = shapes_of(f"""
shape:Far a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:sparql [ sh:message "m" ; sh:select \"\"\"{query}\"\"\" ] .
""")
    [flaw] = broken_shapes(shapes)
    assert flaw.code == "shacl.federated" and "network" in flaw.message


def test_a_federated_ask_in_a_constraint_component_is_refused() -> None:
    """A SPARQL-based constraint component runs its validator's query on every fact too."""
    shapes = shapes_of("""
mk:FarComponent a sh:ConstraintComponent ;
    sh:parameter [ sh:path mk:far ] ;
    sh:validator [ a sh:SPARQLAskValidator ;
        sh:ask "ASK { SERVICE <http://example.org/q> { $value ?p ?o } }" ] .
shape:UsesFar a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:property [ sh:path mk:key ; mk:far true ] .
""")
    assert [f.code for f in broken_shapes(shapes)] == ["shacl.federated"]


def test_a_constraint_pyshacl_cannot_load_is_refused() -> None:
    """pySHACL would raise it on the first write, as it would a query that does not parse."""
    shapes = shapes_of("""
shape:Twice a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:property [ sh:path mk:key ; sh:minCount "one" ] .
""")
    [flaw] = broken_shapes(shapes)
    assert flaw.code == "shacl.shape" and "shape:Twice" in flaw.message


def test_a_query_shacl_forbids_is_refused() -> None:
    """pySHACL refuses MINUS in a SPARQL constraint when it runs it: so does loading."""
    shapes = shapes_of("""
shape:Minus a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:sparql [ sh:select "SELECT $this WHERE { $this ?p ?o MINUS { $this ?p 1 } }" ] .
""")
    [flaw] = broken_shapes(shapes)
    assert flaw.code == "shacl.sparql" and "MINUS" in flaw.message


def test_the_shipped_shapes_load_as_they_are() -> None:
    """The check refuses nothing memkg ships."""
    ontology = Ontology(Roots((builtin("core"), builtin("examples"))))
    assert broken_shapes(ontology.fact_shapes) == []


def test_a_sparql_constraint_that_parses_still_runs() -> None:
    """Checking queries at load changes nothing for one that runs: it still refuses."""
    shapes = shapes_of("""
shape:Confident a sh:NodeShape ; sh:targetClass mk:Fact ;
    sh:sparql [ sh:message "too unsure" ; sh:prefixes shape:decl ;
        sh:select "SELECT $this WHERE { $this mk:confidence ?c . FILTER (?c < 0.5) }" ] .
shape:decl sh:declare [ sh:prefix "mk" ; sh:namespace "https://memkg.dev/ns#" ] .
""")
    assert broken_shapes(shapes) == []
    ontology = Ontology(Roots((builtin("core"), builtin("examples"))))
    checker = shacl.ShaclChecker(ontology.fact_shapes + shapes, ontology.entity_types)
    unsure, sure = (_candidate(confidence) for confidence in (0.2, 0.9))
    assert [[p.message for p in found] for found in checker.check([unsure, sure])] == [
        ["too unsure"],
        [],
    ]


def test_a_failure_while_shapes_run_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever pySHACL raises while it checks a fact reaches the caller as a MemkgError."""

    def fail(self: object) -> None:
        raise RecursionError("Validation path too deep")

    ontology = Ontology(Roots((builtin("core"), builtin("examples"))))
    checker = shacl.ShaclChecker(ontology.fact_shapes, ontology.entity_types, compiled=False)
    monkeypatch.setattr(shacl._Validator, "run", fail)
    with pytest.raises(ConfigError) as refused:
        checker.check([_candidate(0.9)])
    assert refused.value.code == "shacl.failed" and "too deep" in refused.value.message


def _candidate(confidence: float) -> shacl.Candidate:
    from datetime import UTC, datetime

    return shacl.Candidate(
        user_id="li", key="airline.avoided", kind="preference", source="dialogue",
        confidence=confidence, sensitivity="public", observed_at=datetime(2026, 5, 1, tzinfo=UTC),
        valid_until=None, consent_granted=False, entities=("airline:MU",),
    )  # fmt: skip
