"""SHACL on candidate facts: verdicts, shape IRIs, and memoisation that never changes a verdict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib import Graph

from memkg.config import EngineConfig
from memkg.model.source import Source
from memkg.ontology import Ontology
from memkg.validate.shacl import Candidate, ShaclChecker, _value_paths

ONTOLOGY = Ontology(EngineConfig().layers)
T0 = datetime(2026, 5, 1, tzinfo=UTC)
SOURCES = (*Source.BUILTIN, "sensor")  # as if a root declared sensor; gossip stays undeclared

candidates = st.builds(
    Candidate,
    user_id=st.sampled_from(["u1", "u2", "weird:user@x"]),
    key=st.sampled_from(["airline.preferred", "location.city", "seat.preference"]),
    kind=st.sampled_from(["fact", "preference", "state", "pattern"]),
    source=st.sampled_from(["dialogue", "behavior", "profile", "sensor", "gossip"]),
    confidence=st.sampled_from([0.0, 0.5, 0.9, 1.0, 1.5, -0.1]),
    sensitivity=st.sampled_from(["public", "restricted", "special", "prohibited"]),
    observed_at=st.just(T0),
    valid_until=st.sampled_from([None, T0 + timedelta(hours=72)]),
    consent_granted=st.booleans(),
    entities=st.sampled_from([(), ("airline:MU",), ("city:shanghai",), ("airline:ZZ",)]),
    literal=st.sampled_from([None, "aisle", 3]),
)


def test_value_sensitive_paths_are_read_from_the_shapes() -> None:
    paths = {str(p).rsplit("#", 1)[1] for p in _value_paths(ONTOLOGY.fact_shapes) or ()}
    assert {"confidence", "kind", "sensitivity"} <= paths  # source: sh:class, in the signature
    assert "observedAt" not in paths  # only datatype and cardinality are checked on it
    extra = Graph().parse(
        data="""
        @prefix sh: <http://www.w3.org/ns/shacl#> . @prefix mk: <https://memkg.dev/ns#> .
        <urn:s> a sh:NodeShape ; sh:targetClass mk:Fact ;
            sh:property [ sh:path mk:observedAt ; sh:minInclusive "2020-01-01T00:00:00Z" ] .
    """,
        format="turtle",
    )
    assert any(str(p).endswith("observedAt") for p in _value_paths(extra) or ())
    sparql = Graph().parse(
        data="""
        @prefix sh: <http://www.w3.org/ns/shacl#> .
        <urn:s> a sh:NodeShape ; sh:sparql [ sh:select "SELECT $this WHERE {}" ] .
    """,
        format="turtle",
    )
    assert _value_paths(sparql) is None


@settings(max_examples=30, deadline=None)
@given(st.lists(candidates, min_size=1, max_size=12))
def test_memoised_verdicts_equal_fresh_ones(batch: list[Candidate]) -> None:
    memoised = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types, sources=SOURCES)
    memoised.check(batch[: len(batch) // 2])  # warm the memo with part of the batch
    fresh = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types, sources=SOURCES)
    expected = [fresh._run([c])[0] for c in batch]
    got = memoised.check(batch)
    assert [sorted(p.model_dump_json() for p in ps) for ps in got] == [
        sorted(p.model_dump_json() for p in ps) for ps in expected
    ]


def test_state_without_valid_until_violates_the_state_shape() -> None:
    checker = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types)
    state = Candidate(
        "u1", "travel.companions", "state", "dialogue", 0.9, "public", T0, None, False, (), 2
    )
    [problems] = checker.check([state])
    assert [p.path for p in problems] == ["https://memkg.dev/shape/StateShape"]


def test_a_source_is_accepted_only_when_in_force_by_pyshacl_and_compiled_checks() -> None:
    def fact(source: str) -> Candidate:
        return Candidate("u1", "seat.preference", "preference", source, 0.9, "public", T0, None,
                         False, (), "aisle")  # fmt: skip

    for compiled in (True, False):
        checker = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types, compiled=compiled,
                               sources=SOURCES)  # fmt: skip
        assert checker.compiled is compiled
        dialogue, sensor, gossip = checker.check([fact("dialogue"), fact("sensor"), fact("gossip")])
        assert (dialogue, sensor) == ([], [])
        assert [p.code for p in gossip] == ["shacl.violation"]
        assert "source must be a source in force" in gossip[0].message
    builtin_only = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types)
    assert [p.code for p in builtin_only.check([fact("sensor")])[0]] == ["shacl.violation"]
