"""SHACL on candidate facts: verdicts, shape IRIs, and memoisation that never changes a verdict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rdflib import Graph, Literal

from memkg.config import EngineConfig
from memkg.model.source import Source
from memkg.model.vocab import MK
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


BOUNDED = Graph().parse(
    data="""
    @prefix sh: <http://www.w3.org/ns/shacl#> . @prefix mk: <https://memkg.dev/ns#> .
    @prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
    <urn:bounded> a sh:NodeShape ; sh:targetClass mk:Fact ;
        sh:property [ sh:path mk:confidence ;
                      sh:minExclusive 0.25 ; sh:maxExclusive "0.75"^^xsd:decimal ;
                      sh:message "confidence strictly between 0.25 and 0.75" ] ;
        sh:property [ sh:path mk:confidence ; sh:minInclusive 0.5 ;
                      sh:message "confidence at least 0.5" ] .
""",
    format="turtle",
)
"""Every kind of bound on one path, across two shapes: exclusive, inclusive, integer, decimal."""
ON_AND_AROUND = [-1.0, -1e-12, -0.0, 0.0, 1e-12, 0.25 - 1e-12, 0.25, 0.25 + 1e-12, 0.3,
                 0.5 - 1e-12, 0.5, 0.5 + 1e-12, 0.6, 0.75 - 1e-12, 0.75, 0.75 + 1e-12, 0.9,
                 1.0 - 1e-12, 1.0, 1.0 + 1e-12, 2.0]  # fmt: skip
"""Values on each bound of the shipped shapes (0, 1) and of ``BOUNDED``, and either side."""


def _fact(confidence: float, source: str = "dialogue") -> Candidate:
    return Candidate("u1", "airline.preferred", "preference", source, confidence, "public", T0,
                     None, False, ("airline:MU",), "airline:MU")  # fmt: skip


def _words(found: list[list[object]]) -> list[list[str]]:
    return [sorted(p.model_dump_json() for p in ps) for ps in found]  # type: ignore[attr-defined]


def test_a_path_only_bounded_enters_the_signature_by_its_bounds() -> None:
    paths = _value_paths(ONTOLOGY.fact_shapes) or {}
    assert sorted(b.value for b in paths[MK.confidence] or ()) == [0, 1]
    assert paths[MK.kind] is None  # sh:in: by value
    both = Graph().parse(
        data="""
        @prefix sh: <http://www.w3.org/ns/shacl#> . @prefix mk: <https://memkg.dev/ns#> .
        <urn:s> a sh:NodeShape ; sh:targetClass mk:Fact ;
            sh:property [ sh:path mk:confidence ; sh:maxInclusive 1 ] ;
            sh:property [ sh:path mk:confidence ; sh:in ( 0.5 1.0 ) ] .
    """,
        format="turtle",
    )
    assert (_value_paths(both) or {})[MK.confidence] is None  # another constraint: by value
    bounded = _value_paths(BOUNDED) or {}
    assert {Literal(0.25).value, Literal(0.5).value} <= {
        b.value for b in bounded[MK.confidence] or ()
    }


@pytest.mark.parametrize("shapes", [ONTOLOGY.fact_shapes, BOUNDED], ids=["shipped", "bounded"])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "pyshacl"])
def test_the_memo_is_exact_on_each_bound_and_either_side(shapes: Graph, compiled: bool) -> None:
    """A memoised verdict equals an unmemoised check of the same value, for values exactly on
    every bound and just either side, whichever value of a signature came first; and equals
    pySHACL unmemoised, the reference."""
    facts = [_fact(c) for c in ON_AND_AROUND]
    reference = ShaclChecker(shapes, ONTOLOGY.entity_types, compiled=False)
    expected = _words([reference._run([f])[0] for f in facts])
    assert len({tuple(w) for w in expected}) >= 2  # the values do fall on different sides
    for order in (facts, facts[::-1], facts[1::2] + facts[::2]):
        memoised = ShaclChecker(shapes, ONTOLOGY.entity_types, compiled=compiled)
        by_fact = dict(zip(map(id, order), memoised.check(order), strict=True))
        assert _words([by_fact[id(f)] for f in facts]) == expected
        one_by_one = [memoised.check([f])[0] for f in facts]  # answered from the memo
        assert _words(one_by_one) == expected


def test_values_on_the_same_side_of_every_bound_share_one_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Real-valued confidences inside the range cost one check, not one each."""
    checker = ShaclChecker(ONTOLOGY.fact_shapes, ONTOLOGY.entity_types)
    checked: list[Candidate] = []
    run = checker._run

    def counted(batch: list[Candidate]) -> list[list[object]]:
        checked.extend(batch)
        return run(batch)  # type: ignore[return-value]

    monkeypatch.setattr(checker, "_run", counted)
    inside = [_fact(round(0.001 + i * 0.000997, 6)) for i in range(1000)]
    assert len({f.confidence for f in inside}) == 1000
    assert checker.check(inside) == [[]] * 1000
    assert len(checked) == 1
    edges = [_fact(0.0), _fact(1.0), _fact(1.5), _fact(-0.5), _fact(0.5, "behavior")]
    found = checker.check(edges + inside[:10])
    assert [len(ps) for ps in found] == [0, 0, 1, 1, 0] + [0] * 10
    assert len(checked) == 6  # on each bound, above, below, and another source
