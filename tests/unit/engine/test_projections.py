"""The engine's per-user projections: one owner, fresh on every read, bounded, forgotten on
erasure."""

from __future__ import annotations

from pathlib import Path

from memkg import Engine, EngineConfig, FrozenClock
from memkg.arbitration import Outcome

CONSENT = {"provenance": {"consent_granted": True, "consent_version": "v1"}}
PEANUT = {"allergen": "allergen:peanut"}


def _allergy(engine: Engine, value: list[str], source: str) -> str:
    return engine.ingest({"user_id": "mei", "domain": "health", "key": "medical.allergies",
                          "value": value, "source": source, **CONSENT}).fact_id  # fmt: skip


def test_every_cache_sees_a_write_by_another_process(tmp_path: Path, clock: FrozenClock) -> None:
    path = tmp_path / "memkg.db"
    with Engine.open(path, clock=clock) as reader, Engine.open(path, clock=clock) as writer:
        _allergy(writer, ["allergen:peanut"], "profile")
        # every projection of the reader is built and cached at this point of the log
        assert [f.value for f in reader.facts("mei")] == [["allergen:peanut"]]
        assert len(reader.user_graph("mei").memory.facts) == 1
        assert reader.resolve("mei", "health", "medical.allergies").outcome is Outcome.ADOPTED
        before = reader.decide("mei", "health", PEANUT, decision="medication")
        assert before.result.status.value != "needs_review"
        assert reader.projections.users() == ["mei"]

        _allergy(writer, [], "system")  # the other process writes a strong conflict: frozen

        assert len(reader.facts("mei")) == 2
        assert len(reader.user_graph("mei").memory.facts) == 2
        held = reader.resolve("mei", "health", "medical.allergies")
        assert held.outcome is Outcome.FROZEN
        assert held.review_id in {r.review_id for r in reader.projections.reviews("mei")}
        after = reader.decide("mei", "health", PEANUT, decision="medication")
        assert after.result.status.value == "needs_review"


def test_resident_users_are_bounded_least_recently_read_first(clock: FrozenClock) -> None:
    engine = Engine(config=EngineConfig(resident_users=2), clock=clock)
    for user in ("u1", "u2", "u3"):
        engine.ingest({"user_id": user, "domain": "travel", "key": "airline.preferred",
                       "value": "airline:MU", "source": "dialogue", "confidence": 0.9})  # fmt: skip
    engine.edges("u1", "travel")
    assert engine.projections.users() == ["u3", "u1"]
    engine.resolve("u2", "travel", "airline.preferred")
    assert engine.projections.users() == ["u1", "u2"]
    # an evicted user is rebuilt from the log when read again
    assert [f.value for f in engine.facts("u3")] == ["airline:MU"]
    assert engine.projections.users() == ["u2", "u3"]


def test_an_erased_user_leaves_every_cache(engine: Engine) -> None:
    _allergy(engine, ["allergen:peanut"], "profile")
    engine.decide("mei", "health", PEANUT, decision="medication")
    assert engine.projections.users() == ["mei"]
    engine.erase("mei")
    assert engine.projections.users() == []
    assert engine.facts("mei") == []
    assert engine.projections.reviews("mei") == []
