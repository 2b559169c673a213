"""Evaluation: candidates with evidence, negation, joins, why_not, and order independence."""

from __future__ import annotations

from collections.abc import Container
from datetime import UTC, datetime
from typing import Any

from memkg.model.evidence import Edge, GraphPath
from memkg.model.fact import Fact, Provenance
from memkg.rules.evaluator import Evaluator
from memkg.rules.loader import load_bundle
from memkg.rules.snapshot import KeyVerdict, build_input

NOW = datetime(2026, 5, 1, 12, tzinfo=UTC)
DOMAIN = """\
actions: {deny: {description: d}, ask: {description: a}, approve: {description: ok}}
context: {allergen: {type: string}, drug_class: {type: string}}
"""
TABLE = """\
hit_policy: {priority: [deny, ask, approve]}
default: {then: {action: approve}, reason_code: OK, explain: fine}
rules:
  - id: h.allergy
    when:
      - fact: {key: medical.allergies, contains: $context.allergen, as: hit}
    then: {action: deny}
    reason_code: ALLERGY
    explain: "allergic to {hit}"
  - id: h.no_allergy_but_meds
    when:
      - not: {fact: {key: medical.allergies, contains: $context.allergen}}
      - fact: {key: medication.current}
    then: {action: ask}
    reason_code: MEDS
    explain: "takes {medication.current}"
"""


class NoGraph:
    def user_edges(self, of_facts: Container[str] | None = None) -> list[Edge]:
        return []

    def paths(
        self, to: str, via: str | None, of_facts: Container[str] | None = None
    ) -> list[GraphPath]:
        return []


def fact(key: str, value: Any, fid: str, **extra: Any) -> Fact:
    return Fact(
        id=fid,
        user_id="u",
        domain="health",
        key=key,
        value=value,
        kind="fact",
        source="profile",
        confidence=1.0,
        scope="global",
        observed_at=NOW,
        recorded_at=NOW,
        provenance=Provenance(),
        sensitivity="special",
        status=extra.pop("status", "active"),
        schema_version=1,
        **extra,
    )


BUNDLE = load_bundle({"health/domain.yaml": DOMAIN, "health/med.yaml": TABLE})[0]
TABLE_SPEC = BUNDLE.tables[("health", "med")]
EVALUATOR = Evaluator(BUNDLE)
KEYS = frozenset({"medical.allergies", "medication.current"})


def evaluate(facts: list[Fact], context: dict[str, Any], **kw: Any) -> Any:
    inp = build_input(TABLE_SPEC, "u", facts, context, NOW, NoGraph(), keys=KEYS, **kw)
    return inp, EVALUATOR.evaluate(TABLE_SPEC, inp)


def test_join_on_the_context_binds_the_matching_item() -> None:
    facts = [fact("medical.allergies", ["allergen:peanut", "allergen:penicillin"], "f1")]
    _, result = evaluate(facts, {"allergen": "allergen:penicillin"})
    [candidate] = result.candidates
    assert (
        candidate.rule_id == "h.allergy" and candidate.message == "allergic to allergen:penicillin"
    )
    assert [b.ref for b in candidate.bindings] == ["fact:f1#1"]
    assert result.fired[0].conditions[0].facts[0].item == "allergen:penicillin"


def test_negation_blocked_and_unblocked_many_times() -> None:
    # regression: durable-rules' own $not crashed on delete_state after a blocked negation
    meds = fact("medication.current", ["aspirin"], "f2")
    allergy = fact("medical.allergies", ["allergen:penicillin"], "f1")
    for i in range(300):
        blocked = i % 2 == 0
        facts = [meds, allergy] if blocked else [meds]
        _, result = evaluate(facts, {"allergen": "allergen:penicillin"})
        rules = sorted(c.rule_id for c in result.candidates)
        assert rules == (["h.allergy"] if blocked else ["h.no_allergy_but_meds"])


def test_why_not_names_the_first_failing_condition() -> None:
    meds = fact("medication.current", ["aspirin"], "f2")
    allergy = fact("medical.allergies", ["allergen:penicillin"], "f1")
    _, result = evaluate([meds, allergy], {"allergen": "allergen:penicillin"})
    [miss] = result.why_not
    assert (miss.rule_id, miss.failing.index, miss.holding, miss.total) == (
        "h.no_allergy_but_meds",
        0,
        1,
        2,
    )
    assert "found medical.allergies" in (miss.failing.failure or "")


def test_left_out_facts_and_frozen_keys() -> None:
    facts = [
        fact("medication.current", ["aspirin"], "f2", status="pending_confirmation"),
        fact("medical.allergies", ["allergen:peanut"], "f1"),
    ]
    inp, result = evaluate(
        facts,
        {"allergen": "allergen:peanut"},
        verdicts={"medical.allergies": KeyVerdict(frozen=True)},
    )
    assert [(lo.key, lo.reason) for lo in inp.left_out] == [
        ("medical.allergies", "frozen"),
        ("medication.current", "pending_confirmation"),
    ]
    assert inp.frozen_keys == ("medical.allergies",) and result.candidates == ()


def test_the_order_facts_were_written_in_does_not_matter() -> None:
    a = fact("medication.current", ["aspirin"], "f1")
    b = fact("medication.current", ["ibuprofen"], "f2")
    a2, b2 = a.model_copy(update={"id": "f2"}), b.model_copy(update={"id": "f1"})
    _, one = evaluate([a, b], {"allergen": "allergen:x"})
    _, two = evaluate([b2, a2], {"allergen": "allergen:x"})
    assert one.candidates[0].message == two.candidates[0].message == "takes aspirin"
    assert one.candidates[0].alternatives == 1
