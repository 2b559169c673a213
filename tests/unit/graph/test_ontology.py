"""The Turtle stays in step with the Python vocabulary, the schemas, and its own shapes."""

from __future__ import annotations

import json
from pathlib import Path

from pyshacl import validate
from rdflib import OWL, RDF, RDFS, Graph, Namespace, URIRef

from memkg.config import EngineConfig
from memkg.graph.knowledge import Knowledge
from memkg.model.vocab import CLASSES, INDIVIDUALS, KEY, MK, PROPERTIES
from memkg.ontology import Ontology

SH = Namespace("http://www.w3.org/ns/shacl#")
ONTOLOGY = Ontology(EngineConfig().layers)


def _declared(graph: Graph, *types: URIRef) -> set[str]:
    names = set()
    for kind in types:
        for node in graph.subjects(RDF.type, kind):
            if isinstance(node, URIRef) and str(node).startswith(str(MK)):
                names.add(str(node)[len(MK) :])
    return names


def test_python_vocabulary_matches_the_turtle_both_ways() -> None:
    core = ONTOLOGY.core
    assert _declared(core, OWL.Class) == set(CLASSES)
    assert _declared(core, OWL.ObjectProperty, OWL.DatatypeProperty) == set(PROPERTIES)
    for scheme, members in INDIVIDUALS.items():
        assert _declared(core, MK[scheme]) == set(members), scheme
    every = set(CLASSES) | set(PROPERTIES) | {m for ms in INDIVIDUALS.values() for m in ms}
    in_turtle = {str(s)[len(MK) :] for s in core.subjects() if str(s).startswith(str(MK))}
    assert in_turtle == every


def test_domain_knowledge_conforms_to_its_shapes() -> None:
    data = ONTOLOGY.knowledge + ONTOLOGY.core  # the core gives sh:targetClass its subclasses
    conforms, report, text = validate(data, shacl_graph=ONTOLOGY.knowledge_shapes,
                                      inference="none")  # fmt: skip
    violations = list(report.subjects(SH.resultSeverity, SH.Violation))
    assert not violations, text
    assert conforms


def test_knowledge_shapes_catch_a_weight_out_of_range() -> None:
    broken = Graph().parse(data="""
        @prefix mk: <https://memkg.dev/ns#> .
        @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
        @prefix c: <https://memkg.dev/entity/condition/> .
        @prefix p: <https://memkg.dev/entity/protocol/> .
        [] a rdf:Statement ; rdf:subject c:x ; rdf:predicate mk:requires ; rdf:object p:y ;
           mk:weight 1.5 .
    """, format="turtle")  # fmt: skip
    conforms, _, _ = validate(broken, shacl_graph=ONTOLOGY.knowledge_shapes, inference="none")
    assert not conforms


def test_every_entity_key_has_its_shape() -> None:
    shapes = ONTOLOGY.fact_shapes
    for path in sorted(
        p for d in EngineConfig().layers.schema_dirs().values() for p in d.glob("*@*.json")
    ):
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        for key, sub in doc["properties"].items():
            entity = sub["x-memkg"].get("entity")
            if entity is None:
                continue
            targeted = set(shapes.subjects(SH.targetSubjectsOf, KEY[key]))
            assert targeted, f"{path.name}: {key} has no shape in ontology/shapes/keys.ttl"
            classes = {shapes.value(prop, SH["class"]) for shape in targeted
                       for prop in shapes.objects(shape, SH.property)
                       if shapes.value(prop, SH.path) == KEY[key]}  # fmt: skip
            assert MK[entity] in classes, f"{key}: the shape must require sh:class mk:{entity}"


def test_weighted_knowledge_edges_are_indexed() -> None:
    knowledge = Knowledge(ONTOLOGY.knowledge)
    [edge] = knowledge.out("condition:asthma")
    assert (edge.relation, edge.target, edge.weight) == (
        "requires", "protocol:immediate_hospital_visit", 0.92)  # fmt: skip
    assert [e.weight for e in knowledge.reachable(["airline:MU"])] == [None, None]
    assert knowledge.entity_type("airline:MU") == "Airline"
    assert knowledge.label("airline:MU") == "China Eastern"
    assert RDFS.label in {p for _, p, _ in knowledge.describe("airline:MU")}


def test_a_label_past_its_limit_is_refused_naming_the_file_and_node(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from memkg import Engine, FrozenClock
    from memkg.errors import ConfigError
    from memkg.scaffold import init_root

    init_root(tmp_path, "pets")
    turtle = tmp_path / "ontology" / "domains" / "pets.ttl"
    turtle.write_text(turtle.read_text().replace('"Deluxe"@en', '"' + "D" * 2_000_000 + '"@en'))
    clock = FrozenClock(datetime(2026, 5, 1, tzinfo=UTC))
    engine = Engine(clock=clock, config=EngineConfig(roots=(tmp_path,), shacl=False))

    try:
        engine.recall("u1", "deluxe please")  # cost seconds and a GB per first recall
    except ConfigError as exc:
        assert exc.code == "ontology.text_too_long"
        assert "pets.ttl" in exc.message and ":deluxe" in exc.message
        assert "2,000,000 characters" in exc.message
    else:
        raise AssertionError("a 2 MB label was loaded")
