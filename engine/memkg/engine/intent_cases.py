"""Runs rule cases (``rules/**/*.cases.yaml``) through the same path live decisions take."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memkg.clock import FrozenClock
from memkg.engine.decision_graph import WeightedGraphView, fixture_graph
from memkg.engine.decision_record import record_decision
from memkg.errors import ConfigError
from memkg.model.fact import Fact, FactStatus, Kind, Provenance, Scope, Sensitivity, Source
from memkg.model.report import ValidationReport
from memkg.rules.cases import Case, CaseOutcome, CasesReport, run_cases
from memkg.rules.loader import RuleFolders
from memkg.rules.snapshot import build_input
from memkg.rules.validation import request_problems

if TYPE_CHECKING:
    from memkg.engine.intent import Decider, Rules
    from memkg.engine.setup import Setup

CASE_USER = "case-user"


def case_facts(case: Case, setup: Setup) -> list[Fact]:
    clock = FrozenClock(case.now)
    facts = []
    for raw in case.facts:
        source = raw.get("source", "profile")
        if source not in setup.sources:
            where = f"{case.file}:{case.line}: case {case.name!r}"
            unknown = setup.sources.unknown(source)
            raise ConfigError(f"{where}: {unknown}", code="source.undeclared")
        spec = setup.registry.spec(case.table.domain, raw["key"])
        try:
            observed = case.now - timedelta(days=raw.get("observed_days_ago", 0))
            valid = case.now + timedelta(hours=raw["valid_hours"]) if "valid_hours" in raw else None
            if valid is None and spec is not None and spec.kind is Kind.STATE:
                # as a write of it: a state expires after the key's hours, else the default
                hours = spec.valid_for_hours
                valid = observed + (timedelta(hours=hours) if hours
                                    else setup.config.state_valid_for)  # fmt: skip
        except OverflowError as exc:  # a ``now`` near year 1 or 9999
            where = f"{case.file}:{case.line}: case {case.name!r}"
            raise ConfigError(
                f"{where}: observed_days_ago or valid_hours puts a time outside the years "
                f"1 to 9999 from now {case.now.isoformat()}: choose a later now or fewer days",
                code="rules.case",
            ) from exc
        facts.append(
            Fact(
                id=clock.new_id("fact"),
                user_id=CASE_USER,
                domain=case.table.domain,
                key=raw["key"],
                value=raw["value"],
                kind=spec.kind if spec else "fact",
                source=Source(source),
                confidence=raw.get("confidence", 1.0),
                scope=Scope.GLOBAL,
                observed_at=observed,
                recorded_at=observed,
                valid_until=valid,
                provenance=Provenance(source_ref=f"case:{case.name}"),
                sensitivity=spec.sensitivity if spec else Sensitivity.PUBLIC,
                status=FactStatus(raw.get("status", "active")),
                schema_version=1,
            )
        )
    return facts


def refused_facts(case: Case, facts: list[Fact], setup: Setup) -> tuple[str, ...]:
    """Why a write of the case's facts would be refused, one line per problem: validated as an
    ingest is (consent taken as granted: a case states memory, not how it was written)."""
    observations = [
        {
            "user_id": CASE_USER,
            "domain": f.domain,
            "key": f.key,
            "value": f.value,
            "source": f.source,
            "confidence": f.confidence,
            "observed_at": f.observed_at,
            "provenance": {"consent_granted": True},
        }
        for f in facts
    ]
    checked = setup.validator.check_many(observations, case.now, lambda _: b"case")
    return tuple(
        f"facts[{i}] {facts[i].key}: {p.code} at {p.path}: {p.message}"
        for i, result in enumerate(checked)
        if isinstance(result, ValidationReport)
        for p in result.problems
    )


def run_rule_cases(decider: Decider, rules: Rules, folder: RuleFolders) -> CasesReport:
    """Every case under ``folder`` decided by ``rules``, recorded as a live decision is."""
    setup, revisions = decider.setup, decider.revisions(rules)

    def run(case: Case) -> CaseOutcome:
        facts = case_facts(case, setup)
        refused = refused_facts(case, facts, setup)
        table = case.table
        graph = fixture_graph(CASE_USER, facts, setup.knowledge, setup.entity_keys)
        view = WeightedGraphView(graph, case.now, setup.weights, table.domain,
                                 [dict(g) for g in case.graph])  # fmt: skip
        entity = frozenset(k for d, k in setup.entity_keys if d == table.domain)
        context: dict[str, Any] = dict(case.context)
        problems = request_problems(rules.bundle, table.domain, table.name, table, context)
        if problems:
            made = record_decision(rules.bundle, revisions, "case", _request(case), 0, case.now,
                                   table, None, None, problems, {})  # fmt: skip
            return CaseOutcome(made.result, None, None, refused=refused, problems=tuple(problems))
        inp = build_input(
            table, CASE_USER, facts, context, case.now, view, keys=rules.keys(table, entity)
        )
        evaluation = rules.evaluator.evaluate(table, inp, walk_all=True)
        made = record_decision(rules.bundle, revisions, "case", _request(case), 0, case.now,
                               table, inp, evaluation, [], {})  # fmt: skip
        return CaseOutcome(made.result, made.arbitration, evaluation, inp.left_out, refused)

    return run_cases(folder, rules.bundle, run, root=setup.layers)


def _request(case: Case) -> Any:
    from memkg.model.decision import DecisionRequest

    return DecisionRequest(
        user_id=CASE_USER,
        domain=case.table.domain,
        decision=case.table.name,
        context=dict(case.context),
    )
