"""Compiled SHACL checks equal pySHACL: on the W3C core cases they cover and on generated graphs.

pySHACL is the reference. Results are compared as multisets of (focus node, path, constraint
component, source shape, message), severity Violation, as memkg reports them.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyshacl import ShapesGraph
from pyshacl.graph_abstraction import DataGraph as PyShaclData
from rdflib import RDF, XSD, BNode, Graph, Literal, URIRef
from rdflib.term import Node

from memkg.config import EngineConfig
from memkg.model.vocab import KEY, MK
from memkg.ontology import Ontology
from memkg.validate.shacl import SH, Candidate, ShaclChecker, _Validator
from memkg.validate.shape_checks import DataGraph, NotCompilable, compile_shapes

CASES = Path(__file__).resolve().parents[2] / "cases" / "shacl_core"
ONTOLOGY = Ontology(EngineConfig().layers)
T0 = datetime(2026, 5, 1, tzinfo=UTC)

Seen = Counter[tuple[object, ...]]


def _id(node: Node | None) -> object:
    return "_:b" if isinstance(node, BNode) else node


def reference(data: Graph, shapes: Graph) -> Seen:
    harvested = ShapesGraph(shapes)
    validator = _Validator(PyShaclData.from_rdflib(data), harvested, {"inference": "none"})
    _conforms, report, _text = validator.run()  # type: ignore[no-untyped-call]
    seen: Seen = Counter()
    for result in report.subjects(RDF.type, SH.ValidationResult):
        if report.value(result, SH.resultSeverity) != SH.Violation:
            continue
        message = report.value(result, SH.resultMessage)
        shape = report.value(result, SH.sourceShape)
        seen[
            (
                _id(report.value(result, SH.focusNode)),
                _id(report.value(result, SH.resultPath)),
                report.value(result, SH.sourceConstraintComponent),
                _id(shape),
                str(message) if message is not None and shapes.value(shape, SH.message) else None,
            )
        ] += 1
    return seen


def compiled(data: Graph, shapes: Graph) -> Seen:
    checks = compile_shapes(shapes)
    return Counter(
        (_id(r.focus), _id(r.path), r.component, _id(r.source_shape), r.message)
        for r in checks.validate(DataGraph.from_graph(data))
        if r.severity == SH.Violation
    )


def _cases() -> list[Path]:
    return sorted(p for p in CASES.rglob("*.ttl") if not p.stem.endswith(("-data", "-shapes")))


@pytest.mark.parametrize("case", _cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_w3c_core_case_gives_the_same_results_as_pyshacl(case: Path) -> None:
    data_file, shapes_file = (
        case.with_name(f"{case.stem}-data.ttl"),
        case.with_name(f"{case.stem}-shapes.ttl"),
    )
    if not data_file.exists():
        data_file = shapes_file = case
    data, shapes = Graph().parse(data_file), Graph().parse(shapes_file)
    assert compiled(data, shapes) == reference(data, shapes)


def test_the_w3c_cases_are_many_and_not_all_conforming() -> None:
    assert len(_cases()) >= 50
    failing = 0
    for case in _cases():
        data_file = case.with_name(f"{case.stem}-data.ttl")
        graph = Graph().parse(data_file if data_file.exists() else case)
        shapes = (
            Graph().parse(case.with_name(f"{case.stem}-shapes.ttl"))
            if data_file.exists()
            else graph
        )
        failing += bool(compiled(graph, shapes))
    assert failing >= 40


def test_constructs_not_compiled_fall_back_to_pyshacl() -> None:
    shapes = Graph().parse(
        data="""
        @prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://example.org/> .
        ex:S a sh:NodeShape ; sh:targetClass ex:C ;
            sh:property [ sh:path ex:name ; sh:pattern "^a" ; sh:message "starts with a" ] .
        """,
        format="turtle",
    )
    with pytest.raises(NotCompilable):
        compile_shapes(shapes)
    checker = ShaclChecker(shapes, {})
    assert not checker.compiled


def test_the_shipped_fact_shapes_are_compiled() -> None:
    assert ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types).compiled


# -- generated graphs over the shipped shapes -------------------------------------------------

candidates = st.builds(
    Candidate,
    user_id=st.sampled_from(["u1", "u2"]),
    key=st.sampled_from(
        [
            "airline.preferred",
            "location.city",
            "seat.preference",
            "medical.conditions",
            "product.viewed",
            "risk.profile",
        ]
    ),
    kind=st.sampled_from(["fact", "preference", "state", "pattern", "rumour"]),
    source=st.sampled_from(["dialogue", "behavior", "profile", "system", "gossip"]),
    confidence=st.one_of(st.floats(-0.5, 1.5, allow_nan=False), st.sampled_from([0.0, 1.0])),
    sensitivity=st.sampled_from(["public", "restricted", "special", "prohibited"]),
    observed_at=st.just(T0),
    valid_until=st.sampled_from([None, T0 + timedelta(hours=72)]),
    consent_granted=st.booleans(),
    entities=st.sampled_from(
        [
            (),
            ("airline:MU",),
            ("city:shanghai",),
            ("airline:ZZ",),
            ("condition:asthma",),
            ("city:shanghai", "airline:MU"),
            ("product:iphone_16",),
        ]
    ),
    literal=st.sampled_from([None, "aisle", 3, {"a": [1]}]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(candidates, min_size=1, max_size=4))
def test_checker_verdicts_equal_pyshacl_on_generated_candidates(
    batch: list[Candidate],
) -> None:
    fast = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types)
    slow = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types, compiled=False)
    assert fast.compiled and not slow.compiled
    got = fast._run(batch)
    expected = slow._run(batch)
    assert [sorted(p, key=repr) for p in got] == [sorted(p, key=repr) for p in expected]


NODE = URIRef("urn:memkg:candidate:0")
MUTATIONS: list[tuple[str, Node, Node | None]] = [
    ("drop", MK.key, None),
    ("drop", MK.kind, None),
    ("drop", MK.subject, None),
    ("drop", MK.confidence, None),
    ("drop", MK.observedAt, None),
    ("drop", RDF.type, None),
    ("add", MK.kind, MK.preference),
    ("add", MK.key, Literal("other.key")),
    ("add", MK.source, MK.behavior),
    ("add", MK.literalValue, Literal('"x"')),
    ("add", MK.object, URIRef("https://memkg.dev/entity/airline/MU")),
    ("add", MK.validUntil, Literal("tomorrow")),
    ("add", MK.validUntil, Literal(T0, datatype=XSD.dateTime)),
    ("set", MK.confidence, Literal("high")),
    ("set", MK.confidence, Literal(Decimal("1.01"), datatype=XSD.decimal)),
    ("set", MK.confidence, Literal(1, datatype=XSD.integer)),
    ("set", MK.confidence, Literal("0.5", datatype=XSD.decimal)),
    ("set", MK.observedAt, Literal("2026-05-01")),
    ("set", MK.observedAt, Literal("not a time", datatype=XSD.dateTime)),
    ("set", MK.key, URIRef("https://example.org/key")),
    ("set", MK.kind, Literal("fact")),
    ("set", MK.sensitivity, MK.prohibited),
    ("set", MK.subject, Literal("u1")),
    ("set", KEY["airline.preferred"], URIRef("https://memkg.dev/entity/city/shanghai")),
    ("set", KEY["airline.preferred"], Literal("airline:MU")),
]


@settings(max_examples=150, deadline=None)
@given(candidates, st.lists(st.sampled_from(MUTATIONS), max_size=4))
def test_compiled_results_equal_pyshacl_on_generated_graphs(
    candidate: Candidate, mutations: list[tuple[str, Node, Node | None]]
) -> None:
    checker = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types)
    triples = checker._triples(NODE, candidate)
    if not isinstance(triples, list):
        return  # refused before any shape runs (not an entity reference)
    graph = Graph()
    for triple in triples:
        graph.add(triple)
    for action, predicate, value in mutations:
        if action in ("drop", "set"):
            graph.remove((NODE, predicate, None))
        if value is not None:
            graph.add((NODE, predicate, value))
    assert compiled(graph, ONTOLOGY.fact_shapes) == reference(graph, ONTOLOGY.fact_shapes)
