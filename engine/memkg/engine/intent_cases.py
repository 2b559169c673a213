"""Runs rule cases (``rules/**/*.cases.yaml``) through the same path live decisions take."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memkg.clock import FrozenClock
from memkg.engine.decision_graph import fixture_graph
from memkg.errors import ConfigError
from memkg.model.fact import Fact, FactStatus, Provenance, Scope, Sensitivity, Source
from memkg.rules.cases import Case, CaseOutcome, CasesReport, run_cases
from memkg.rules.loader import RuleFolders
from memkg.rules.snapshot import build_input
from memkg.rules.validation import request_problems

if TYPE_CHECKING:
    from memkg.engine.decisions import DecisionLayer as Engine
    from memkg.engine.intent import IntentLayer, Rules

CASE_USER = "case-user"


def case_facts(case: Case, engine: Engine) -> list[Fact]:
    clock = FrozenClock(case.now)
    facts = []
    for raw in case.facts:
        source = raw.get("source", "profile")
        if source not in engine.sources:
            where = f"{case.file}:{case.line}: case {case.name!r}"
            unknown = engine.sources.unknown(source)
            raise ConfigError(f"{where}: {unknown}", code="source.undeclared")
        spec = engine.registry.spec(case.table.domain, raw["key"])
        observed = case.now - timedelta(days=raw.get("observed_days_ago", 0))
        valid = case.now + timedelta(hours=raw["valid_hours"]) if "valid_hours" in raw else None
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


def run_rule_cases(layer: IntentLayer, rules: Rules, folder: RuleFolders) -> CasesReport:
    from memkg.engine.intent import graph_view

    engine = layer.engine

    def run(case: Case) -> CaseOutcome:
        facts = case_facts(case, engine)
        table = case.table
        graph = fixture_graph(CASE_USER, facts, engine.knowledge, engine.entity_keys)
        view = graph_view(graph, case.now, engine, table.domain, [dict(g) for g in case.graph])
        entity = frozenset(k for d, k in engine.entity_keys if d == table.domain)
        context: dict[str, Any] = dict(case.context)
        problems = request_problems(rules.bundle, table.domain, table.name, table, context)
        if problems:
            made = layer._record(
                rules, "case", _request(case), 0, case.now, table, None, None, problems, {}
            )
            return CaseOutcome(made.result, None, None)
        inp = build_input(
            table, CASE_USER, facts, context, case.now, view, keys=rules.keys(table, entity)
        )
        evaluation = rules.evaluator.evaluate(table, inp, walk_all=True)
        made = layer._record(
            rules, "case", _request(case), 0, case.now, table, inp, evaluation, [], {}
        )
        return CaseOutcome(made.result, made.arbitration, evaluation, inp.left_out)

    return run_cases(folder, rules.bundle, run, root=engine.layers)


def _request(case: Case) -> Any:
    from memkg.model.decision import DecisionRequest

    return DecisionRequest(
        user_id=CASE_USER,
        domain=case.table.domain,
        decision=case.table.name,
        context=dict(case.context),
    )
