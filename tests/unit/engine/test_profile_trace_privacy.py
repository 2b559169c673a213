"""A profile's trace holds no context value (stored data, free text at times) and goes with
the facts it shows when they are purged."""

from __future__ import annotations

import json

import pytest

from memkg import Engine, NotFound

SECRET = "chemo at Beijing Cancer Hospital"


def _profiled(engine: Engine) -> str:
    engine.ingest({"user_id": "u1", "domain": "travel", "key": "seat.preference",
                   "value": "aisle", "source": "dialogue", "confidence": 0.9,
                   "context": {"trip_type": SECRET},
                   "provenance": {"audit_log_id": "aud-1"}})  # fmt: skip
    profile = engine.render_profile("u1", "travel", 2000)
    assert SECRET in profile.text  # the prompt shows it, quoted: the user's own memory
    assert profile.trace_id is not None
    return profile.trace_id


def test_the_trace_names_the_key_and_its_facts_not_the_context_value(
    sqlite_engine: Engine,
) -> None:
    trace = sqlite_engine.trace(_profiled(sqlite_engine))
    stored = json.dumps(trace.model_dump(mode="json"), ensure_ascii=False)
    assert "Cancer" not in stored
    assert "key:seat.preference[context]" in [i.ref for i in trace.items]
    fact = sqlite_engine.facts("u1", "travel")[0]
    assert trace.output["read"] == [fact.id]


def test_erasing_the_audit_id_takes_the_profile_trace(sqlite_engine: Engine) -> None:
    trace_id = _profiled(sqlite_engine)
    sqlite_engine.erase_audit_id("aud-1")
    with pytest.raises(NotFound):
        sqlite_engine.trace(trace_id)
