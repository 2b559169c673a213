"""A decision reads the in-memory projection and its NetworkX view: it builds no RDF graph.

The rdflib dataset of a user is built on demand (export, SPARQL, SHACL). The count is taken
with the interpreter's profiling hook on rdflib's ``Graph.__init__``, which every rdflib graph,
conjunctive graph and dataset runs, so no code under test is replaced.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import rdflib

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}
NIGHT = datetime(2026, 5, 1, 14, 15, tzinfo=UTC)  # 22:15 in Shanghai


@contextmanager
def rdf_graphs_built() -> Iterator[Callable[[], int]]:
    """Count the rdflib graphs constructed in the block (on this thread)."""
    target = rdflib.Graph.__init__.__code__
    count = 0

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal count
        if event == "call" and frame.f_code is target:
            count += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield lambda: count
    finally:
        sys.setprofile(previous)


def _mei(engine: Engine) -> None:
    facts = (("timezone", "Asia/Shanghai"), ("child.age", 3),
             ("medical.conditions", ["condition:asthma"]))  # fmt: skip
    for key, value in facts:
        engine.ingest({"user_id": "mei", "domain": "health", "key": key, "value": value,
                       "source": "profile", "provenance": CONSENT})  # fmt: skip


def test_the_hook_sees_rdflib_graphs_built() -> None:
    with rdf_graphs_built() as built:
        rdflib.Dataset()
        rdflib.Graph()
    assert built() >= 2


def test_a_decision_for_a_resident_user_builds_no_rdf_graph(tmp_path: Path) -> None:
    clock = FrozenClock(NIGHT)
    with Engine.open(tmp_path / "m.db", clock=clock, config=EngineConfig(shacl=False)) as engine:
        _mei(engine)
        engine.decide("mei", "health", {"symptom": "fever"})  # rules compiled, user resident
        with rdf_graphs_built() as built:
            decision = engine.decide("mei", "health", {"symptom": "fever"})
            explained = engine.explain(decision.decision_id)
        # a path through the domain knowledge took part, read from the NetworkX view
        assert decision.result.action == "book_emergency_appointment"
        assert "asthma_child_fever_night" in explained
        assert built() == 0
        with rdf_graphs_built() as built:
            engine.graph("mei", "health", fmt="turtle")  # export builds it, on demand
        assert built() > 0


def test_a_decision_for_a_user_not_resident_builds_no_rdf_graph(tmp_path: Path) -> None:
    clock = FrozenClock(NIGHT)
    with Engine.open(tmp_path / "m.db", clock=clock, config=EngineConfig(shacl=False)) as engine:
        _mei(engine)
    with Engine.open(tmp_path / "m.db", clock=clock, config=EngineConfig(shacl=False)) as engine:
        engine.decide("nobody", "health", {"symptom": "fever"})  # rules compiled
        with rdf_graphs_built() as built:
            decision = engine.decide("mei", "health", {"symptom": "fever"})
        assert decision.result.action == "book_emergency_appointment"
        assert built() == 0
