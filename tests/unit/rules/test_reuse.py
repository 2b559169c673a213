"""Candidates and explanation nodes reused across evaluations: never stale, always bounded."""

from __future__ import annotations

import gc
from datetime import timedelta
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision
from memkg.rules.reuse import SIZE, Reuse
from support.health_rules import CONSENT, health_engine

RULES = """\
hit_policy:
  priority: [book_same_day_appointment, advise_home_monitoring]
default:
  then: {action: advise_home_monitoring}
  reason_code: NONE
  explain: nothing applies
rules:
  - id: t.young_fever
    when:
      - fact: {key: child.age, lt: 10}
      - context: {symptom: fever}
    then: {action: book_same_day_appointment}
    reason_code: YOUNG
    explain: "{child.age}-year-old with {symptom}"
  - id: t.infant_fever
    when:
      - fact: {key: child.age, lt: 2}
      - context: {symptom: fever}
    then: {action: book_same_day_appointment}
    reason_code: INFANT
    explain: infant with fever
"""


class Thing:
    """Stands for a fact: any object that can be weakly referenced."""


@pytest.fixture
def engine(tmp_path: Path) -> tuple[Engine, FrozenClock]:
    made, clock = health_engine(tmp_path, RULES)
    age(made, clock, 4)
    return made, clock


def age(engine: Engine, clock: FrozenClock, years: int) -> None:
    clock.advance(timedelta(seconds=1))
    engine.ingest(
        {
            "user_id": "u",
            "domain": "health",
            "key": "child.age",
            "value": years,
            "source": "profile",
            "provenance": CONSENT,
        }
    )


def decide(engine: Engine, clock: FrozenClock, symptom: str = "fever") -> Decision:
    clock.advance(timedelta(seconds=1))
    return engine.decide("u", "health", {"symptom": symptom}, decision="t")


def shown(decision: Decision) -> str:
    """What the explanation and candidates say, but the decision's own id, time and position."""
    own = {"decision_id", "decided_at", "as_of_seq", "local_time", "context"}
    return decision.explanation.model_dump_json(exclude=own) + "".join(
        c.model_dump_json() for c in decision.candidates
    )


def test_a_changed_fact_changes_the_explanation(engine: tuple[Engine, FrozenClock]) -> None:
    made, clock = engine
    first = decide(made, clock)
    [rule] = first.explanation.selected
    assert rule.message == "4-year-old with fever"
    [fact] = rule.conditions[0].facts
    assert fact.value == 4
    [near] = first.explanation.why_not
    assert near.rule_id == "t.infant_fever" and "4" in (near.failing.failure or "")
    assert len(made.intent.rules.evaluator.reuse) > 0

    again = decide(made, clock)  # nothing changed: built from what the first one kept
    assert again.explanation.selected[0] is first.explanation.selected[0]
    assert shown(again) == shown(first)

    age(made, clock, 7)
    changed = decide(made, clock)
    [rule] = changed.explanation.selected
    assert rule.message == "7-year-old with fever"
    [fact] = rule.conditions[0].facts
    assert (
        fact.value == 7
        and fact.fact_id != first.explanation.selected[0].conditions[0].facts[0].fact_id
    )
    [near] = changed.explanation.why_not
    assert "7" in (near.failing.failure or "") and "4" not in (near.failing.failure or "")

    # the same decision built with nothing kept says exactly the same
    made.intent.rules.evaluator.reuse.clear()
    assert shown(decide(made, clock)) == shown(changed)


def test_changed_context_changes_the_explanation(engine: tuple[Engine, FrozenClock]) -> None:
    made, clock = engine
    fever = decide(made, clock)
    cough = decide(made, clock, "cough")
    assert not cough.explanation.selected and cough.result.action == "advise_home_monitoring"
    assert decide(made, clock).explanation.selected[0].message == "4-year-old with fever"
    assert shown(decide(made, clock)) == shown(fever)


def test_an_entry_goes_with_the_objects_it_was_built_on() -> None:
    reuse = Reuse()
    held, other = Thing(), Thing()
    reuse.put("k", (held,), "node")
    assert reuse.get("k", (held,)) == "node"
    assert reuse.get("k", (other,)) is None  # same key, another object: not this entry
    assert reuse.get("k", ()) is None
    del held
    gc.collect()
    assert len(reuse) == 0
    assert reuse.get("k", (other,)) is None


def test_a_newer_entry_outlives_the_objects_of_the_one_it_replaced() -> None:
    reuse = Reuse()
    old, new = Thing(), Thing()
    reuse.put("k", (old,), "old")
    reuse.put("k", (new,), "new")
    del old
    gc.collect()
    assert reuse.get("k", (new,)) == "new"


def test_the_cache_keeps_its_bound() -> None:
    reuse = Reuse(size=8)
    kept = [Thing() for _ in range(20)]
    for n, thing in enumerate(kept):
        reuse.put(n, (thing,), n)
        assert len(reuse) <= 8
    assert len(reuse) == 8
    assert reuse.get(19, (kept[19],)) == 19 and reuse.get(0, (kept[0],)) is None  # oldest out

    full = Reuse()
    assert full.size == SIZE == 4_096
    things = [Thing() for _ in range(SIZE + 500)]
    for n, thing in enumerate(things):
        full.put(n, (thing,), n)
    assert len(full) == SIZE


def test_a_cache_of_size_zero_keeps_nothing() -> None:
    reuse = Reuse(size=0)
    thing = Thing()
    reuse.put("k", (thing,), "node")
    assert len(reuse) == 0 and reuse.get("k", (thing,)) is None


def test_an_evaluator_keeps_its_bound(engine: tuple[Engine, FrozenClock]) -> None:
    made, clock = engine
    evaluator = made.intent.rules.evaluator
    evaluator.reuse.size = 3
    for years in range(3, 10):
        age(made, clock, years)
        decide(made, clock)
        assert len(evaluator.reuse) <= 3


def test_nothing_is_kept_of_an_erased_user(engine: tuple[Engine, FrozenClock]) -> None:
    made, clock = engine
    decide(made, clock)
    assert len(made.intent.rules.evaluator.reuse) > 0
    made.erase("u")
    gc.collect()
    assert len(made.intent.rules.evaluator.reuse) == 0


def test_a_changed_fact_changes_which_rules_nearly_fired(
    engine: tuple[Engine, FrozenClock],
) -> None:
    """Whether a fact condition holds on its own is kept per pool of facts, never past them."""
    made, clock = engine
    assert [n.rule_id for n in decide(made, clock).explanation.why_not] == ["t.infant_fever"]
    age(made, clock, 1)
    infant = decide(made, clock)
    assert [c.rule_id for c in infant.candidates] == ["t.young_fever", "t.infant_fever"]
    assert not infant.explanation.why_not
    age(made, clock, 12)
    older = decide(made, clock)
    assert not older.candidates
    assert [n.rule_id for n in older.explanation.why_not] == ["t.young_fever", "t.infant_fever"]
    age(made, clock, 4)
    assert [n.rule_id for n in decide(made, clock).explanation.why_not] == ["t.infant_fever"]
