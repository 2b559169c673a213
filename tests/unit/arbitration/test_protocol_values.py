"""Protocol values are enums: stored as values, compared as members; events written with the
older English prose still read the same."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from memkg.clock import FrozenClock
from memkg.engine import Engine, IngestResult
from memkg.events.memory import MemoryEventStore
from memkg.model.event import EventType, NewEvent
from memkg.model.fact import FactStatus, Source, SupersedeReason
from memkg.model.weight import SignalKind, WeightParams

Ingest = Callable[..., IngestResult]
OLD_PROSE = {"explicit_change": "explicit change", "restated": "restated by the same source"}


def _superseded(engine: Engine) -> list[NewEvent]:
    return [e for e in engine.store.read_stream("u1") if e.type is EventType.FACT_SUPERSEDED]


def test_a_change_stores_its_reason_as_a_protocol_value(engine: Engine, ingest: Ingest) -> None:
    profile = ingest("location.city", "city:beijing", "profile", 0.95, ago=timedelta(days=200))
    moved = ingest("location.city", "city:shanghai", "dialogue", 0.9, change=True)
    engine.confirm("u1", moved.fact_id)  # a change awaiting confirmation ends nothing before
    [event] = _superseded(engine)
    assert event.payload["reason"] == "explicit_change"
    old = engine.memory("u1").facts[profile.fact_id]
    assert old.supersede_reason is SupersedeReason.EXPLICIT_CHANGE
    assert old.status_reason == "explicit change"


def test_events_stored_with_the_old_prose_read_the_same(
    engine: Engine, ingest: Ingest, clock: FrozenClock
) -> None:
    profile = ingest("location.city", "city:beijing", "profile", 0.95, ago=timedelta(days=200))
    moved = ingest("location.city", "city:shanghai", "dialogue", 0.9, change=True)
    engine.confirm("u1", moved.fact_id)
    current = engine.resolve("u1", "travel", "location.city")

    old_store = MemoryEventStore()  # the same history, as an older memkg wrote it
    for event in engine.store.read_stream("u1"):
        payload = dict(event.payload)
        if event.type is EventType.FACT_SUPERSEDED:
            payload["reason"] = OLD_PROSE[payload["reason"]]
        fields = event.model_dump(exclude={"seq", "version", "payload"})
        old_store.append("u1", [NewEvent(**fields, payload=payload)])
    assert [e.payload["reason"] for e in old_store.read_stream("u1")
            if e.type is EventType.FACT_SUPERSEDED] == ["explicit change"]  # fmt: skip

    reopened = Engine(old_store, clock=clock, config=engine.config)
    fact = reopened.memory("u1").facts[profile.fact_id]
    assert fact.status is FactStatus.SUPERSEDED
    assert fact.supersede_reason is SupersedeReason.EXPLICIT_CHANGE
    assert fact.status_reason == "explicit change"
    again = reopened.resolve("u1", "travel", "location.city")
    assert [(s.fact_id, s.why) for s in again.stale] == [(profile.fact_id, "superseded_by_change")]
    assert (again.value, again.step, again.claims) == (current.value, current.step, current.claims)


def test_prose_no_protocol_value_stood_for_is_shown_never_compared() -> None:
    from memkg.model.fact import read_supersede_reason

    assert read_supersede_reason({"reason": "plan diet@2"}) == (None, "plan diet@2")
    outdated = "observed before f1, which already holds this slot"
    assert read_supersede_reason({"reason": outdated}) == (SupersedeReason.OUTDATED, outdated)
    assert read_supersede_reason({"reason": "migration", "detail": "plan x"}) == (
        SupersedeReason.MIGRATION,
        "plan x",
    )


def test_credibility_is_keyed_by_source_and_every_source_needs_one() -> None:
    params = WeightParams()
    assert set(params.credibility) == set(Source.BUILTIN)
    with pytest.raises(ValidationError, match=r"no weight for source .*third_party"):
        WeightParams(credibility={"dialogue": 0.7, "behavior": 0.9, "profile": 0.95,
                                  "system": 1.0, "rule": 1.0})  # fmt: skip
    with pytest.raises(ValidationError, match="gossip"):
        WeightParams(credibility={**params.credibility, "gossip": 0.5})
    assert set(params.signal_scores) <= set(SignalKind)


def test_recall_weighs_sources_with_the_domain_policy(tmp_path: Path, clock: FrozenClock) -> None:
    from memkg import EngineConfig

    observation = {"user_id": "u1", "domain": "commerce", "key": "product.viewed",
                   "value": "product:canon_pixma_g3010", "source": "behavior",
                   "confidence": 0.9}  # fmt: skip
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "policy.yaml").write_text(
        "version: 1\ndomains:\n  commerce:\n    credibility: {behavior: 0.5}\n"
    )
    found = []
    for config in (EngineConfig(shacl=False), EngineConfig(shacl=False, roots=(tmp_path,))):
        with Engine(clock=clock, config=config) as engine:
            engine.ingest(observation)
            [candidate] = engine.recall("u1", "canon pixma", k=1).candidates
            found.append(candidate.scores.confidence)
    assert found == [pytest.approx(0.9 * 0.9), pytest.approx(0.9 * 0.5)]
