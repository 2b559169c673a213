"""Which rules nearly fired, and how far each got, are reused across decisions: never stale.

The evaluator keeps the rules closest to firing under the truth of each test and the rules
that fired, and the walk of a rule that reads only facts and the context under the facts and
context properties it reads (``Reuse``). Counted and compared, never timed: a decision served
from what an earlier one kept says exactly what it says when nothing was kept.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.model.decision import Decision
from memkg.rules import near_miss as near_miss_module
from memkg.rules.reuse import Reuse
from support.health_rules import CONSENT, health_engine

RULES = """\
hit_policy:
  priority: [recommend_urgent_care, book_same_day_appointment, advise_home_monitoring]
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
  - id: t.allergic_rash
    when:
      - fact: {key: medical.allergies, contains: $context.allergen}
      - context: {symptom: rash}
    then: {action: recommend_urgent_care}
    reason_code: ALLERGY
    explain: allergic
"""
CONTEXT_ONLY = """\
  - id: t.rash_reported
    when:
      - context: {symptom: rash}
    then: {action: advise_home_monitoring}
    reason_code: RASH
    explain: "{symptom} reported"
"""


@pytest.fixture
def engine(tmp_path: Path) -> tuple[Engine, FrozenClock]:
    return made_with(tmp_path, RULES)


def made_with(tmp_path: Path, rules: str) -> tuple[Engine, FrozenClock]:
    made, clock = health_engine(tmp_path, rules)
    write(made, clock, "child.age", 4)
    write(made, clock, "medical.allergies", ["allergen:penicillin"])
    return made, clock


def write(engine: Engine, clock: FrozenClock, key: str, value: Any) -> None:
    clock.advance(timedelta(seconds=1))
    engine.ingest({"user_id": "u", "domain": "health", "key": key, "value": value,
                   "source": "profile", "provenance": CONSENT})  # fmt: skip


def decide(engine: Engine, clock: FrozenClock, **context: str) -> Decision:
    clock.advance(timedelta(minutes=7))  # the clock moves between decisions, as it does
    return engine.decide("u", "health", context or {"symptom": "fever"}, decision="t")


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The rules ``check_rule`` walks, in order (a rule whose conditions share no messages
    and read no binding is never walked: ``matcher.unjoined``)."""
    walked: list[str] = []
    check_rule = near_miss_module.check_rule

    def counted(rule: Any, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("unjoined"):  # found without a walk otherwise
            walked.append(rule.id)
        return check_rule(rule, *args, **kwargs)

    monkeypatch.setattr(near_miss_module, "check_rule", counted)
    yield walked


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """The near-miss lists the evaluator worked out (and kept) rather than reused."""
    kept: list[object] = []
    put = Reuse.put

    def counted(self: Reuse, key: Any, held: Any, value: Any) -> None:
        if key[0] == "close":
            kept.append(value)
        put(self, key, held, value)

    monkeypatch.setattr(Reuse, "put", counted)
    yield kept


def fresh(engine: Engine, made: Decision) -> None:
    """``made`` is what the same decision says with nothing kept (made again with an empty
    ``Reuse``; what was kept stays for the decisions that follow)."""
    evaluator = engine.intent.rules.evaluator
    kept, evaluator.reuse = evaluator.reuse, Reuse()
    try:
        assert engine.replay(made.decision_id).reproduced
    finally:
        evaluator.reuse = kept


def near(made: Decision) -> list[str]:
    return [n.rule_id for n in made.explanation.why_not]


def test_a_second_decision_on_the_same_facts_walks_no_rule(
    engine: tuple[Engine, FrozenClock], walks: list[str], closes: list[object]
) -> None:
    made, clock = engine
    first = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert walks == ["t.allergic_rash"] and len(closes) == 1
    assert near(first) == ["t.young_fever", "t.allergic_rash"]
    again = decide(made, clock, symptom="rash", allergen="allergen:latex")  # minutes later
    assert walks == ["t.allergic_rash"] and len(closes) == 1
    assert again.explanation.why_not == first.explanation.why_not
    fresh(made, again)


def test_a_write_is_seen_by_the_next_decision(
    engine: tuple[Engine, FrozenClock], walks: list[str], closes: list[object]
) -> None:
    made, clock = engine
    decide(made, clock)
    decide(made, clock)
    assert len(closes) == 1
    write(made, clock, "child.age", 12)  # a new fact: nothing kept of the old one applies
    older = decide(made, clock)
    assert len(closes) == 2 and not older.candidates
    assert near(older) == ["t.young_fever", "t.infant_fever"]
    assert "12" in (older.explanation.why_not[0].failing.failure or "")
    fresh(made, older)
    write(made, clock, "child.age", 1)
    infant = decide(made, clock)
    assert [c.rule_id for c in infant.candidates] == ["t.young_fever", "t.infant_fever"]
    assert not infant.explanation.why_not
    fresh(made, infant)
    # a joined rule's walk is kept per fact: a new allergy is walked again
    decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert walks == ["t.allergic_rash"]
    write(made, clock, "medical.allergies", ["allergen:latex"])
    allergic = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert [c.rule_id for c in allergic.candidates] == ["t.allergic_rash"]
    write(made, clock, "medical.allergies", ["allergen:peanut"])
    other = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert walks == ["t.allergic_rash", "t.allergic_rash"]
    assert near(other) == ["t.young_fever", "t.infant_fever", "t.allergic_rash"]  # aged 1
    fresh(made, other)


def test_another_context_is_not_served_what_an_earlier_one_kept(
    engine: tuple[Engine, FrozenClock], walks: list[str]
) -> None:
    made, clock = engine
    assert near(decide(made, clock)) == ["t.infant_fever"]
    rash = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert near(rash) == ["t.young_fever", "t.allergic_rash"]
    assert walks == ["t.allergic_rash"]
    fresh(made, rash)
    # the allergen is read through ``$context.allergen``: a new one is walked again
    matched = decide(made, clock, symptom="rash", allergen="allergen:penicillin")
    assert [c.rule_id for c in matched.candidates] == ["t.allergic_rash"]
    assert near(matched) == ["t.young_fever"]
    fresh(made, matched)  # (its replay walks too)
    walked = len(walks)
    other = decide(made, clock, symptom="rash", allergen="allergen:peanut")
    assert walks[walked:] == ["t.allergic_rash"]
    assert near(other) == ["t.young_fever", "t.allergic_rash"]
    fresh(made, other)
    # the same context again, in another session and turn: served, and the same
    walked = len(walks)
    clock.advance(timedelta(minutes=3))
    again = made.decide("u", "health", {"symptom": "rash", "allergen": "allergen:peanut"},
                        decision="t", session_id="s1", turn="t1")  # fmt: skip
    assert len(walks) == walked
    assert again.explanation.why_not == other.explanation.why_not
    fresh(made, again)


def test_no_near_miss_is_kept_of_an_erased_user(engine: tuple[Engine, FrozenClock]) -> None:
    made, clock = engine
    decide(made, clock)
    decide(made, clock, symptom="rash", allergen="allergen:latex")
    reuse = made.intent.rules.evaluator.reuse
    assert any(key[0] in ("close", "walk") for key in reuse._entries)
    made.erase("u")
    gc.collect()
    assert not [key for key in reuse._entries if key[0] in ("close", "walk")]


def test_no_explanation_node_keeps_an_erased_users_request_context(tmp_path: Path) -> None:
    """A near miss that failed on a context test, or a rule that fired on the context alone,
    shows the request's context ("symptom is rash", "rash reported"): worked out from no
    fact, it is not kept, so nothing of it outlives the erasure."""
    made, clock = made_with(tmp_path, RULES + CONTEXT_ONLY)
    first = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert any("rash" in repr(node.failing) for node in first.explanation.why_not)
    assert "rash reported" in repr(first.explanation)
    again = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert again.explanation.why_not == first.explanation.why_not
    made.erase("u")
    gc.collect()
    reuse = made.intent.rules.evaluator.reuse
    left = [entry for entry in reuse._entries.items() if "rash" in repr(entry)]
    assert left == []


def test_a_node_shown_from_the_context_alone_is_built_once_while_the_memory_is_resident(
    tmp_path: Path,
) -> None:
    """A near miss that failed on a context test and a rule that fired on the context alone
    are kept bound to the user's memory: the same request again, on the same memory or
    after a write, is served the very nodes the first built; another user, or the memory
    read anew (evicted, erased), builds its own."""
    made, clock = made_with(tmp_path, RULES + CONTEXT_ONLY)
    first = decide(made, clock, symptom="rash", allergen="allergen:latex")
    failed = [n for n in first.explanation.why_not if n.failing.kind == "context"]
    fired = [n for n in first.explanation.selected if n.rule_id == "t.rash_reported"]
    assert failed and fired
    again = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert all(any(n is m for m in again.explanation.why_not) for n in failed)
    assert any(n is fired[0] for n in again.explanation.selected)
    fresh(made, again)
    other = decide(made, clock, symptom="fever")
    assert not any(n is m for n in failed for m in other.explanation.why_not)
    write(made, clock, "child.age", 5)  # a write: the nodes show no fact, they stay
    later = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert later.explanation.why_not == again.explanation.why_not
    assert all(any(n is m for m in later.explanation.why_not) for n in failed)
    assert any(n is fired[0] for n in later.explanation.selected)
    fresh(made, later)
    made.projections.forget("u")  # evicted: read anew, built anew, and the same
    gc.collect()
    anew = decide(made, clock, symptom="rash", allergen="allergen:latex")
    assert anew.explanation.why_not == later.explanation.why_not
    assert not any(n is m for n in failed for m in anew.explanation.why_not)
    assert not any(n is fired[0] for n in anew.explanation.selected)
    fresh(made, anew)


def test_a_write_that_leaves_every_test_as_it_was_finds_the_near_misses_kept(
    engine: tuple[Engine, FrozenClock], walks: list[str], closes: list[object]
) -> None:
    """Which rules nearly fired follows from the rules that fired and the truth of each test:
    a write that changes neither (a child of 4 now 5: still under 10, not under 2) works
    none of it out again, and says what a decision with nothing kept says."""
    made, clock = engine
    first = decide(made, clock)
    assert len(closes) == 1 and near(first) == ["t.infant_fever"]
    write(made, clock, "child.age", 5)
    later = decide(made, clock)
    assert len(closes) == 1 and near(later) == ["t.infant_fever"]
    assert "5" in (later.explanation.why_not[0].failing.failure or "")
    write(made, clock, "child.age", 1)  # now under 2: the tests change, worked out again
    infant = decide(made, clock)
    assert len(closes) == 2 and not near(infant)
    fresh(made, later)
    fresh(made, infant)
