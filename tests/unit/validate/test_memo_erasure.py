"""Validation keeps texts it checked for reuse (a key's schema verdicts, the guards' clean
texts, the SHACL memo); an erasure or a purge drops them, so no text the erased user wrote
stays in memory."""

from __future__ import annotations

from memkg import Engine, EngineConfig, FrozenClock
from memkg.validate import shacl
from support.observations import CONSENTED, T0, obs

CITY = "city:singapore"


def _kept(engine: Engine) -> dict[str, bool]:
    validator = engine.validator
    assert validator.shacl is not None
    return {
        "schema": any(text == CITY for _, text in validator._passed),
        "guards": CITY in validator._clean,
        "shacl": bool(validator.shacl._memo),
        "literals": shacl._literal.cache_info().currsize > 0,
    }


def test_an_erasure_drops_the_texts_validation_kept() -> None:
    engine = Engine(config=EngineConfig(shacl=True), clock=FrozenClock(T0))
    engine.ingest(obs(key="location.city", value=CITY, **CONSENTED))
    assert _kept(engine) == dict.fromkeys(["schema", "guards", "shacl", "literals"], True)
    engine.erase("u1")
    assert _kept(engine) == dict.fromkeys(["schema", "guards", "shacl", "literals"], False)


def test_a_purge_by_audit_id_drops_them_too() -> None:
    engine = Engine(config=EngineConfig(shacl=True), clock=FrozenClock(T0))
    provenance = {**CONSENTED["provenance"], "audit_log_id": "audit-7"}
    engine.ingest(obs(key="location.city", value=CITY, provenance=provenance))
    assert _kept(engine)["guards"]
    engine.erase_audit_id("audit-7")
    assert not any(_kept(engine).values())
    assert engine.facts("u1") == []
