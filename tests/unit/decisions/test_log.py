"""The DecisionLog contract, for every adapter; erasure removes a user's decisions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock, NotFound
from memkg.config import EngineConfig
from memkg.decisions import DecisionLog, SqliteDecisionLog, differences
from memkg.errors import InvalidOperation
from memkg.model.decision import LeftOut

NOW = datetime(2026, 5, 1, 9, tzinfo=UTC)


def profile(key: str, value: Any, audit_log_id: str | None = None) -> dict[str, Any]:
    provenance = {"consent_granted": True, "consent_version": "v1", "audit_log_id": audit_log_id}
    return {
        "user_id": "u",
        "domain": "finance",
        "key": key,
        "value": value,
        "source": "profile",
        "confidence": 0.95,
        "provenance": provenance,
    }


def test_contract(log: DecisionLog, logged_engine: Engine) -> None:
    logged_engine.ingest(profile("risk.profile", "risk:conservative"))
    first = logged_engine.decide(
        "u", "finance", {"product_type": "etf", "product_risk": "growth", "amount": 100}
    )
    second = logged_engine.decide("v", "finance", {"product_type": "bonds", "amount": 1})
    third = logged_engine.decide("u", "finance", {"product_type": "bonds", "amount": 2})
    assert log.get(first.decision_id) == first
    assert log.for_user("u") == [first, third]
    assert log.for_user("u", limit=1) == [third]
    assert log.recent(2) == [second, third] and log.recent(9) == [first, second, third]
    assert log.recent(2**63) == log.recent(10**30) == [first, second, third]  # past every count
    with pytest.raises(NotFound) as missing:
        log.get("dec_" + "x" * 10_000)
    assert len(str(missing.value)) < 200  # a huge id is not repeated whole
    assert log.recent(0) == []
    with pytest.raises(InvalidOperation):
        log.append(first)
    assert log.bundle(first.revisions.rule_bundle) is not None
    assert log.bundle("no-such-digest") is None
    assert log.erase_user("u") == 2
    with pytest.raises(NotFound):
        log.get(first.decision_id)
    assert log.for_user("u") == []
    assert log.get(second.decision_id) == second
    assert log.recent(9) == [second]


def test_erase_citing_removes_only_the_decisions_that_cite_the_facts(
    log: DecisionLog, logged_engine: Engine
) -> None:
    risk = logged_engine.ingest(profile("risk.profile", "risk:growth", "aud-risk")).fact_id
    horizon = logged_engine.ingest(profile("investment.horizon_years", 1, "aud-horizon")).fact_id
    assert risk is not None and horizon is not None
    suitability = logged_engine.decide(
        "u", "finance", {"product_type": "bonds", "product_risk": "balanced", "amount": 100}
    )
    flags = logged_engine.decide("u", "finance", {"amount": 100}, decision="risk_flags")
    assert risk in suitability.model_dump_json() and risk not in flags.model_dump_json()

    assert log.erase_citing("v", [risk]) == 0  # another user's decisions are never touched
    assert log.erase_citing("u", []) == 0
    assert log.erase_citing("u", [""]) == 0  # an empty id does not match every record
    assert log.erase_citing("u", [risk, "fact_unknown"]) == 1
    with pytest.raises(NotFound):
        log.get(suitability.decision_id)
    assert log.for_user("u") == [flags]
    assert log.erase_citing("u", [risk]) == 0
    assert log.erase_citing("u", [horizon]) == 1
    assert log.for_user("u") == []


def test_sqlite_erase_citing_leaves_no_byte_of_the_facts(tmp_path: Path) -> None:
    path = tmp_path / "decisions.db"
    log = SqliteDecisionLog(path)
    engine = Engine(clock=FrozenClock(NOW), config=EngineConfig(shacl=False), decision_log=log)
    risk = engine.ingest(profile("risk.profile", "risk:growth", "aud-1")).fact_id
    made = engine.decide("u", "finance", {"product_type": "bonds", "product_risk": "balanced"})
    kept = engine.decide("u", "finance", {"amount": 5}, decision="risk_flags")
    files = [path, path.with_name(path.name + "-wal")]
    assert risk is not None and any(risk.encode() in p.read_bytes() for p in files)

    assert log.erase_citing("u", [risk]) == 1

    for file in files:
        data = file.read_bytes() if file.exists() else b""
        assert risk.encode() not in data and made.decision_id.encode() not in data, file
    assert log.for_user("u") == [kept]
    log.close()


def test_sqlite_erasure_leaves_no_byte_of_the_user(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db, clock=FrozenClock(NOW), config=EngineConfig(shacl=False)) as engine:
        engine.ingest(
            {
                "user_id": "zhang-wei-7781",
                "domain": "finance",
                "key": "risk.profile",
                "value": "risk:growth",
                "source": "profile",
                "provenance": {"consent_granted": True, "consent_version": "v1"},
            }
        )
        made = engine.decide("zhang-wei-7781", "finance", {"product_type": "etf", "amount": 5})
        receipt = engine.erase("zhang-wei-7781")
        assert receipt.removed["decisions"] == 1
        with pytest.raises(NotFound):
            engine.explain(made.decision_id)
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert b"zhang-wei-7781" not in data and made.decision_id.encode() not in data, path


def test_differences_name_paths() -> None:
    found = differences(
        {"result": {"action": "a"}, "timings": {"x": 1}},
        {"result": {"action": "b"}, "timings": {"x": 2}},
    )
    assert [str(d) for d in found] == ["$.result.action: recorded a, replayed b"]


def _variant(made: Any, decision_id: str, **update: Any) -> Any:
    """``made`` as another decision of the same user, with ``update`` applied."""
    explanation = made.explanation.model_copy(update={"decision_id": decision_id})
    return made.model_copy(update={"decision_id": decision_id, "explanation": explanation,
                                   **update})  # fmt: skip


def test_erase_citing_matches_whole_fact_ids_and_merged_ids_only(
    log: DecisionLog, logged_engine: Engine
) -> None:
    made = logged_engine.decide("mei2", "finance", {"product_type": "bonds", "amount": 1})
    request = made.request.model_copy(update={"context": {"note": "meiosis", "peer": "mei2"}})
    cites = [LeftOut(kind="fact", ref="fact_1", key="risk.profile", reason="superseded"),
             LeftOut(kind="edge", ref="fact_7>risk:growth", key="risk.profile", reason="stale")]
    decisions = {
        "substring": _variant(made, "dec_substring", request=request),  # "mei" inside values
        "merged": _variant(made, "dec_merged", merged_ids=("mei",)),
        "prefix": _variant(made, "dec_prefix", left_out=(  # ids that merely start with fact_1
            LeftOut(kind="fact", ref="fact_10", key="risk.profile", reason="superseded"),
            LeftOut(kind="edge", ref="fact_1x>risk:growth", key="risk.profile", reason="stale"))),
        "cites": _variant(made, "dec_cites", left_out=tuple(cites)),
    }
    for decision in decisions.values():
        log.append(decision)

    assert log.erase_citing("mei2", ["fact_1"]) == 1
    assert log.erase_citing("mei2", ["fact_7"]) == 0  # already gone with fact_1
    assert log.erase_citing("mei2", [], merged_ids=["mei"]) == 1
    assert log.erase_citing("mei2", ["mei", "fact_"], merged_ids=["me", "mei2"]) == 0

    kept = {d.decision_id for d in log.for_user("mei2")}
    assert kept == {made.decision_id, "dec_substring", "dec_prefix"}


def test_remove_takes_out_one_decision(log: DecisionLog, logged_engine: Engine) -> None:
    """A decision logged apart from the events that an erasure overtook is taken back out
    (``Decider._logged``); the id may be logged again, as the decision made afresh is."""
    first = logged_engine.decide("u", "finance", {"product_type": "bonds", "amount": 1})
    second = logged_engine.decide("u", "finance", {"product_type": "bonds", "amount": 2})
    assert log.remove(first.decision_id) is True
    assert log.remove(first.decision_id) is False
    with pytest.raises(NotFound):
        log.get(first.decision_id)
    assert log.for_user("u") == [second] and log.recent(9) == [second]
    log.append(first)
    assert log.for_user("u") == [second, first]


def test_a_listing_keeps_to_its_domains_and_pages_back(
    log: DecisionLog, logged_engine: Engine
) -> None:
    made = [
        logged_engine.decide("u", domain, context)
        for _ in range(3)
        for domain, context in (("finance", {"amount": 1}), ("health", {"symptom": "fever"}))
    ]
    ids = [d.decision_id for d in made]
    health = [d.decision_id for d in made if d.request.domain == "health"]
    listed = log.for_user("u", domains={"health"}, limit=2)
    assert [d.decision_id for d in listed] == health[-2:]
    older = log.for_user("u", domains={"health"}, limit=2, before=listed[0].decision_id)
    assert [d.decision_id for d in older] == health[:1]
    assert [d.decision_id for d in log.for_user("u", before=ids[3])] == ids[:3]
    assert log.for_user("u", domains=set()) == [] and log.for_user("u", before=ids[0]) == []
    for before, domains in ((ids[0], {"health"}), ("dec_none", None), (ids[1], {"nowhere"})):
        with pytest.raises(NotFound) as missing:  # a page starts at a decision it lists
            log.for_user("u", domains=domains, before=before)
        assert missing.value.code == "decision.not_found"
    with pytest.raises(NotFound) as elsewhere:  # another user's decision: not in this log
        log.for_user("v", before=ids[1])
    assert "among the decisions of v" in str(elsewhere.value)


def test_a_sqlite_listing_reads_what_it_returns_however_long_the_history(
    tmp_path: Path,
) -> None:
    """The newest few of a user's decisions cost the same at 10 and at 600 decisions: the
    log reads them by the index on the user, newest first, and stops at the limit."""
    log = SqliteDecisionLog(tmp_path / "d.db")
    engine = Engine(clock=FrozenClock(NOW), config=EngineConfig(shacl=False), decision_log=log)
    first = engine.decide("u", "finance", {"amount": 1})
    steps: list[int] = []

    def count() -> int:
        steps.append(1)
        return 0

    def listing_steps() -> int:
        steps.clear()
        log._db.set_progress_handler(count, 10)  # every 10 virtual-machine instructions
        try:
            assert len(log.for_user("u", limit=5)) == 5
            assert len(log.for_user("u", limit=5, domains={"finance"})) == 5
        finally:
            log._db.set_progress_handler(None, 0)
        return len(steps)

    for n in range(1, 600):
        if n == 10:
            short = listing_steps()
        log.append(first.model_copy(update={"decision_id": f"dec_{n:04d}"}))
    long = listing_steps()
    assert long <= short * 1.5, (short, long)  # it read every record before: about 60 times
    log.close()
