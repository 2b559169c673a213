"""Outcomes per fact and the dry-run verdict (PASS / WARN / BLOCK, waivers)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memkg.engine.migrations import StoredPii
from memkg.evolution.dry_run import Finding, assess, key_changes, policy_findings
from memkg.evolution.migration import MigrationError, parse_plan
from memkg.evolution.outcome import migrate
from memkg.evolution.waiver import load_waiver
from memkg.model.fact import Fact, FactStatus, Provenance, Scope, Sensitivity, Source
from memkg.validate.registry import SchemaRegistry
from support.observations import T0
from support.schema_roots import PLAN, ROOT

REGISTRY = SchemaRegistry(ROOT / "schemas")
OLD, NEW = REGISTRY.group("health", "diet", 1), REGISTRY.group("health", "diet", 2)
PII = StoredPii(lambda _: b"test-salt")
GOOD = (ROOT / PLAN).read_text(encoding="utf-8")
GUESSLESS = GOOD.replace("              otherwise: {unknown: unknown}\n", "")


def fact(user: str, value: Any, *, key: str = "diet.restrictions", seq: int = 1,
         consent: bool = True, source: Source = Source.DIALOGUE, **extra: Any) -> Fact:  # fmt: skip
    return Fact(id=f"fact_{user}_{seq}", user_id=user, domain="health", key=key, value=value,
                kind="preference", source=source, confidence=0.8, scope=Scope.GLOBAL,
                observed_at=T0, recorded_at=T0, provenance=Provenance(consent_granted=consent),
                sensitivity=Sensitivity.SPECIAL, status=FactStatus.ACTIVE, schema_version=1,
                seq=seq, **extra)  # fmt: skip


FACTS = [fact("u1", ["halal"]), fact("u2", ["vegan"]), fact("u3", ["no_organ_meat", "no_pork"])]


def test_a_plan_that_guesses_nothing_leaves_facts_without_evidence_unmappable() -> None:
    plan = parse_plan(GUESSLESS, "p.yaml")
    outcomes = migrate(plan, FACTS, OLD, NEW, PII)
    assert [(o.user_id, o.status) for o in outcomes] == [
        ("u1", "unmappable"), ("u2", "migrated"), ("u3", "migrated")]  # fmt: skip
    report = assess(plan, outcomes, key_changes(plan, OLD, NEW), [], now=T0)
    assert report.verdict == "BLOCK" and report.exit_status == 3
    [blocking] = [f for f in report.findings if f.severity == "block"]
    assert (blocking.code, blocking.subject, blocking.key) == (
        "fact.unmappable", "fact_u1_1", "diet.restrictions")  # fmt: skip
    assert "['halal']" in blocking.message and "no `otherwise`" in blocking.message


def test_the_explicit_unknown_passes_and_says_what_is_unknown() -> None:
    plan = parse_plan(GOOD, "p.yaml")
    outcomes = migrate(plan, FACTS, OLD, NEW, PII)
    news = {o.user_id: {v.key: v.value for v in o.outputs} for o in outcomes}
    assert news["u1"]["diet.organ_meat_tolerance"] == {"level": "unknown", "exceptions": []}
    assert news["u2"]["diet.organ_meat_tolerance"]["level"] == "never"
    assert news["u3"] == {
        "diet.restrictions": ["no_pork"],
        "diet.organ_meat_tolerance": {"level": "never", "exceptions": []},
    }
    report = assess(plan, outcomes, key_changes(plan, OLD, NEW), policy_findings(plan, OLD, NEW),
                    now=T0)  # fmt: skip
    assert report.verdict == "PASS"
    assert report.counts["migrated"] == 3 and report.counts["unknown"] == 1
    assert report.examples["unknown"][0]["user_id"] == "u1"
    changes = {c.key: c.change for c in report.key_changes}
    assert changes == {"diet.restrictions": "changed", "diet.organ_meat_tolerance": "added"}


def test_values_two_old_values_share_are_lossy_and_warn() -> None:
    plan = parse_plan(GOOD, "p.yaml")
    facts = [fact("u1", ["vegan"]), fact("u2", ["vegan", "no_organ_meat"])]
    outcomes = migrate(plan, facts, OLD, NEW, PII)
    assert [o.lossy for o in outcomes] == [True, True]
    report = assess(plan, outcomes, [], [], now=T0)
    assert report.verdict == "WARN" and report.counts["lossy"] == 2


def test_facts_the_new_version_refuses_are_invalid() -> None:
    plan = parse_plan(GOOD, "p.yaml")
    unconsented = fact("u1", ["vegan"], consent=False)
    [outcome] = migrate(plan, [unconsented], OLD, NEW, PII)
    assert outcome.status == "invalid"
    assert any("requires consent" in p for p in outcome.problems)
    bad = parse_plan(GOOD.replace("{const: []}", "{const: [Pork Liver]}"), "p.yaml")
    [outcome] = migrate(bad, [fact("u1", ["vegan"])], OLD, NEW, PII)
    assert outcome.status == "invalid" and "/exceptions/0" in outcome.problems[0]


def test_only_live_facts_of_the_old_version_are_the_plan_s_business() -> None:
    plan = parse_plan(GOOD, "p.yaml")
    newer = fact("u1", ["halal"], seq=2).model_copy(update={"schema_version": 2})
    other = fact("u1", [], key="medical.allergies", seq=3)
    assert migrate(plan, [newer, other], OLD, NEW, PII) == []


def test_unchanged_drop_and_merge() -> None:
    text = """migration: m
domain: health
from: diet@1
to: diet@2
steps:
  - key: diet.restrictions
    to: [{key: diet.restrictions, value: {copy: ""}}]
"""
    [same] = migrate(parse_plan(text, "p.yaml"), [fact("u1", ["halal"])], OLD, NEW, PII)
    assert same.status == "unchanged"
    dropping = parse_plan(text.replace(
        '    to: [{key: diet.restrictions, value: {copy: ""}}]', "    drop: nobody asks any more"),
        "p.yaml")  # fmt: skip
    [gone] = migrate(dropping, [fact("u1", ["halal"])], OLD, NEW, PII)
    assert (gone.status, gone.lossy, gone.reason) == ("dropped", True, "nobody asks any more")
    report = assess(dropping, [gone], [], [], now=T0)
    assert report.verdict == "WARN" and report.findings[0].code == "fact.dropped"


def test_merge_joins_each_source_s_claims_per_slot_and_names_ambiguous_ones() -> None:
    registry = SchemaRegistry(ROOT / "schemas")
    old = {**registry.group("health", "family", 1)}
    plan = parse_plan("""migration: m
domain: health
from: family@1
to: diet@2
steps:
  - merge: [child.count, child.age]
    to:
      - key: diet.organ_meat_tolerance
        value: {object: {level: {unknown: unknown}, exceptions: {const: []}}}
""", "p.yaml")  # fmt: skip
    facts = [
        fact("u1", 1, key="child.count", seq=1),
        fact("u1", 2, key="child.count", seq=5),
        fact("u1", 4, key="child.age", seq=3),
        fact("u2", 3, key="child.age", seq=4),
        fact("u2", 2, key="child.count", seq=6, source=Source.PROFILE),
    ]
    outcomes = migrate(plan, facts, {k: old[k] for k in ("child.count", "child.age")}, NEW, PII)
    assert sorted((o.user_id, o.status, [f.id for f in o.facts]) for o in outcomes) == [
        ("u1", "unmappable", ["fact_u1_1", "fact_u1_5", "fact_u1_3"]),
        ("u2", "migrated", ["fact_u2_4"]),
        ("u2", "migrated", ["fact_u2_6"]),
    ]  # every live fact is in one outcome; sources are never mixed
    [ambiguous] = [o for o in outcomes if o.status == "unmappable"]
    assert "fact_u1_1 (child.count = 1)" in ambiguous.reason
    assert "fact_u1_5 (child.count = 2)" in ambiguous.reason


def _waiver(tmp_path: Path, digest: str, **fields: str) -> Path:
    body = {"waiver": "diet_organ_meat", "plan_digest": digest,
            "signed_off_by": "Wei Zhang, data protection officer",
            "signed_off_at": "2026-05-01T08:00:00Z",
            "reason": "the intake form that wrote these is retired; they are re-asked",
            **fields}  # fmt: skip
    text = "".join(f"{k}: {v}\n" for k, v in body.items())
    text += "findings:\n  - code: fact.unmappable\n    key: diet.restrictions\n"
    path = tmp_path / "waiver.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_signed_off_waiver_turns_block_into_warn_for_this_exact_plan(tmp_path: Path) -> None:
    plan = parse_plan(GUESSLESS, "p.yaml")
    outcomes = migrate(plan, FACTS, OLD, NEW, PII)
    waiver = load_waiver(_waiver(tmp_path, plan.digest))
    report = assess(plan, outcomes, [], [], waiver=waiver, now=T0)
    assert report.verdict == "WARN"
    assert [f.waived for f in report.findings if f.code == "fact.unmappable"] == [True]
    assert report.waiver is not None and report.waiver["signed_off_by"].startswith("Wei Zhang")
    other = load_waiver(_waiver(tmp_path, "ab" * 32))
    blocked = assess(plan, outcomes, [], [], waiver=other, now=T0)
    assert blocked.verdict == "BLOCK"
    assert any(
        f.code == "waiver.invalid" and "sign it again" in f.message for f in blocked.findings
    )
    expired = load_waiver(_waiver(tmp_path, plan.digest, expires_at="2026-05-01T08:30:00Z"))
    assert assess(plan, outcomes, [], [], waiver=expired, now=T0).verdict == "BLOCK"
    rule = Finding(code="rule.breaks", severity="block", message="x", subject="r1")
    assert assess(plan, [], [], [rule], waiver=waiver, now=T0 + timedelta(1)).verdict == "BLOCK"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("waiver: m\n", "`plan_digest` is missing"),
        (
            "waiver: m\nplan_digest: x\nsigned_off_by: a\nsigned_off_at: yesterday\nreason: r\n"
            "findings: []\n",
            "`findings` is missing",
        ),
        (
            "waiver: m\nplan_digest: x\nsigned_off_by: a\nsigned_off_at: yesterday\nreason: r\n"
            "findings: [{code: x}]\n",
            "ISO 8601",
        ),
        (
            "waiver: m\nplan_digest: x\nsigned_off_by: a\nsigned_off_at: 2026-05-01T08:00:00\n"
            "reason: r\nfindings: [{code: x}]\n",
            "time zone",
        ),
        (
            "waiver: m\nplan_digest: x\nsigned_off_by: a\nsigned_off_at: 2026-05-01T08:00:00Z\n"
            "reason: r\nfindings: [{rule: x}]\n",
            "{code, key?, subjects?}",
        ),
    ],
)
def test_a_waiver_must_say_who_when_what_and_why(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MigrationError, match=message.replace("?", r"\?").replace("{", r"\{")):
        load_waiver(path)


def test_a_live_fact_of_a_plan_key_under_an_older_version_is_reported() -> None:
    plan = parse_plan(GOOD, "p.yaml")
    older = fact("u1", ["halal"]).model_copy(update={"schema_version": 0})
    [outcome] = migrate(plan, [older], OLD, NEW, PII)
    assert outcome.status == "unmappable"
    assert "stored under version 0" in outcome.reason and "diet@1" in outcome.reason


def test_a_key_the_new_version_makes_special_needs_consent_as_a_write_does() -> None:
    # a write of special-category data without consent is refused (``policy.consent_missing``),
    # so a migration must not carry such a fact over into the new version either
    plan = parse_plan(GOOD, "p.yaml")
    special = {key: replace(spec, consent=False) for key, spec in NEW.items()}
    assert all(s.sensitivity is Sensitivity.SPECIAL for s in special.values())
    [outcome] = migrate(plan, [fact("u1", ["vegan"], consent=False)], OLD, special, PII)
    assert outcome.status == "invalid"
    assert any("special-category data, which needs consent" in p for p in outcome.problems)
    [outcome] = migrate(plan, [fact("u1", ["vegan"])], OLD, special, PII)
    assert outcome.status == "migrated" and not outcome.problems
