"""The intent layer, wired for ``Engine``: rules in files → decision → explanation → log.

``decide`` reads the user's graph at the current log position, lets arbitration say which
claims hold and which keys are frozen, evaluates the domain's rule table, applies its hit
policy and records everything. ``replay`` does the same as of the recorded position, with
the recorded clock and rule bundle, and compares. Rule bundles are linted (and, on reload,
their cases run) before use; a new bundle replaces the old one in one assignment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from memkg.arbitration.hit_policy import arbitrate
from memkg.arbitration.review import reviews_from
from memkg.decision_graph import WeightedGraphView, verdicts
from memkg.decisions import DecisionLog, differences
from memkg.errors import ConfigError, MemkgError
from memkg.explain import build_explanation, render
from memkg.graph.projection import UserGraph
from memkg.graph.weights import Signal
from memkg.model.decision import Decision, DecisionRequest, DecisionStatus, Result, Revisions
from memkg.model.fact import Fact
from memkg.rules.evaluator import Evaluation, Evaluator
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle, read_sources
from memkg.rules.snapshot import DecisionInput, GraphView, KeyVerdict, build_input
from memkg.rules.spec import Finding, RuleBundle, RuleTable
from memkg.rules.validation import request_problems

if TYPE_CHECKING:
    from memkg.engine import Engine


class RulesRefused(ConfigError):
    """A rule bundle failed lint or its cases; the bundle in use stays."""

    code = "rules.refused"

    def __init__(self, message: str, findings: list[Finding], failures: list[str] | None = None):
        super().__init__(message)
        self.findings = findings
        self.failures = failures or []

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message,
                "findings": [f.to_dict() for f in self.findings], "failures": self.failures}  # fmt: skip


class ReplayReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    reproduced: bool
    differences: tuple[str, ...] = ()
    replayed: Decision | None = None


@dataclass(frozen=True)
class Rules:
    """A linted, compiled bundle and the keys each table reads."""

    bundle: RuleBundle
    evaluator: Evaluator
    digest: str

    def keys(self, table: RuleTable, entity_keys: frozenset[str]) -> frozenset[str]:
        read = {c.key for r in table.rules for c in r.conditions if c.key}
        return frozenset(read | entity_keys)


def lint_sources(sources: dict[str, str], engine: Engine) -> tuple[RuleBundle, list[Finding]]:
    """Everything the loader and lint find wrong with a bundle, against the engine's schemas."""
    bundle, findings = load_bundle(sources)
    findings += lint_bundle(bundle, lambda d, k: (s.schema if (s := engine.registry.spec(d, k))
                                                  else None))  # fmt: skip
    return bundle, sorted(findings, key=lambda f: (f.file, f.line, f.code))


def compile_rules(sources: dict[str, str], engine: Engine) -> Rules:
    """Load, lint and compile; a bundle with any lint error is refused."""
    bundle, findings = lint_sources(sources, engine)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise RulesRefused(f"the rule bundle has {len(errors)} problem(s); first: {errors[0]}", errors)
    return Rules(bundle, Evaluator(bundle), bundle.digest)


class IntentLayer:
    def __init__(self, engine: Engine, log: DecisionLog) -> None:
        self.engine = engine
        self.log = log
        self._lock = threading.Lock()
        self._rules: Rules | None = None
        self._replay_rules: dict[str, Rules] = {}

    @property
    def rules(self) -> Rules:
        if self._rules is None:
            with self._lock:
                if self._rules is None:
                    self._rules = compile_rules(read_sources(self.engine.config.rules_dir), self.engine)
                    self.log.save_bundle(self._rules.digest, self._rules.bundle.sources)
        return self._rules

    def swap(self, rules: Rules) -> None:
        self.log.save_bundle(rules.digest, rules.bundle.sources)
        with self._lock:
            self._rules = rules

    def revisions(self, rules: Rules) -> Revisions:
        return Revisions(rule_bundle=rules.digest, schema_versions=self.engine.registry.versions(),
                         ontology=self.engine.ontology.digest)  # fmt: skip

    # -- deciding ---------------------------------------------------------------------------

    def decide(self, user_id: str, domain: str, context: Mapping[str, Any] | None = None,
               decision: str | None = None) -> Decision:  # fmt: skip
        engine = self.engine
        with engine._lock:
            head = engine.store.head()
            graph = engine.user_graph(user_id)
            now, decision_id = engine.clock.now(), engine.clock.new_id("dec")
            made = self._decide(self.rules, user_id, domain, dict(context or {}), decision,
                                graph, max(head, graph.seq), now, decision_id)  # fmt: skip
        self.log.append(made)
        return made

    def _decide(self, rules: Rules, user_id: str, domain: str, context: dict[str, Any],
                decision: str | None, graph: UserGraph, as_of: int, now: datetime,
                decision_id: str) -> Decision:  # fmt: skip
        started = time.perf_counter()
        bundle = rules.bundle
        table = bundle.table(domain, decision)
        name = table.name if table else (decision or "")
        request = DecisionRequest(user_id=user_id, domain=domain, decision=name, context=context)
        problems = request_problems(bundle, domain, decision, table, context)
        inp: DecisionInput | None = None
        evaluation: Evaluation | None = None
        if table is not None and not problems:
            inp = self._input(rules, table, user_id, context, graph, as_of, now)
            evaluation = rules.evaluator.evaluate(table, inp)
        timings = {"evaluate_ms": round((time.perf_counter() - started) * 1000, 3)}
        return self._record(rules, decision_id, request, as_of, now, table, inp, evaluation,
                            problems, timings)  # fmt: skip

    def _input(self, rules: Rules, table: RuleTable, user_id: str, context: dict[str, Any],
               graph: UserGraph, as_of: int, now: datetime) -> DecisionInput:  # fmt: skip
        engine = self.engine
        entity = frozenset(k for d, k in engine.entity_keys if d == table.domain)
        keys = rules.keys(table, entity)
        facts = [f for f in graph.memory.facts.values() if f.domain == table.domain]
        view = WeightedGraphView(graph, now, engine.config.weights, table.domain)
        return build_input(table, user_id, facts, context, now, view, keys=keys,
                           verdicts=self._verdicts(graph, facts, keys, as_of, now))  # fmt: skip

    def _verdicts(self, graph: UserGraph, facts: list[Fact], keys: frozenset[str], as_of: int,
                  now: datetime) -> dict[str, KeyVerdict]:  # fmt: skip
        engine = self.engine
        registry = engine.registry
        domain = facts[0].domain if facts else ""
        specs = [s for k in sorted(keys) if (s := registry.spec(domain, k)) is not None]
        relevant = [f for f in facts if f.key in keys]
        if not relevant:
            return {}
        reviews = list(reviews_from(engine.store.read_stream(graph.user_id, up_to_seq=as_of)).values())

        def signals(fact: Fact) -> list[Signal]:
            found = {s.event_id: s for t in graph.targets(fact) for s in graph.signals_for(fact, t)}
            return [s.as_signal() for _, s in sorted(found.items())]

        resolutions = engine.reader.resolve_domain(relevant, signals, reviews, specs, now,
                                                   user_id=graph.user_id)  # fmt: skip
        return verdicts(resolutions)

    def _record(self, rules: Rules, decision_id: str, request: DecisionRequest, as_of: int,
                now: datetime, table: RuleTable | None, inp: DecisionInput | None,
                evaluation: Evaluation | None, problems: list[str],
                timings: dict[str, float]) -> Decision:  # fmt: skip
        arbitration, result, default = None, None, None
        if evaluation is not None and table is not None and inp is not None:
            arbitration, output = arbitrate(table.hit_policy, evaluation.candidates)
            chosen = [c for c in evaluation.candidates if c.rule_id in arbitration.selected]
            if arbitration.violation:
                problems = [*problems, arbitration.violation]
                result = Result(status=DecisionStatus.HIT_POLICY_VIOLATION)
            elif output is not None:
                result = Result(status=DecisionStatus.DECIDED, action=output.action,
                                parameters=output.parameters, urgency=output.urgency,
                                reason_codes=tuple(c.reason_code for c in chosen),
                                message="; ".join(c.message for c in chosen))  # fmt: skip
            elif table.default is not None:
                out = table.default.output
                default = table.default.explain
                result = Result(status=DecisionStatus.DECIDED, action=out.action,
                                parameters=out.parameters, urgency=out.urgency,
                                reason_codes=(table.default.reason_code,), message=default,
                                default_used=True)  # fmt: skip
            else:
                result = Result(status=DecisionStatus.NO_MATCH)
            if inp.frozen_keys and result.status is not DecisionStatus.HIT_POLICY_VIOLATION:
                problems = [*problems, *(f"{k} is frozen until a reviewer settles conflicting "
                                         "claims" for k in inp.frozen_keys)]  # fmt: skip
                result = result.model_copy(update={"status": DecisionStatus.NEEDS_REVIEW})
        if result is None:
            result = Result(status=DecisionStatus.INVALID_INPUT)
        spec = rules.bundle.domains.get(request.domain)
        explanation = build_explanation(
            decision_id=decision_id, request=request, decided_at=now, as_of_seq=as_of,
            rule_bundle=rules.digest, arbitration=arbitration, result=result,
            fired=evaluation.fired if evaluation else (),
            why_not=evaluation.why_not if evaluation else (),
            left_out=inp.left_out if inp else (), context=inp.context if inp else request.context,
            describe={a: s.description for a, s in spec.actions.items()} if spec else {},
            default=default, problems=problems,
        )  # fmt: skip
        return Decision(
            decision_id=decision_id, request=request, as_of_seq=as_of, decided_at=now,
            revisions=self.revisions(rules),
            candidates=evaluation.candidates if evaluation else (), arbitration=arbitration,
            result=result, explanation=explanation, left_out=inp.left_out if inp else (),
            problems=tuple(problems), timings=timings,
        )  # fmt: skip

    # -- after the fact ---------------------------------------------------------------------

    def explain(self, decision_id: str, fmt: str = "text") -> str:
        return render(self.log.get(decision_id).explanation, fmt)

    def replay(self, decision_id: str) -> ReplayReport:
        recorded = self.log.get(decision_id)
        found: list[str] = []
        rules = self._rules_for(recorded.revisions.rule_bundle)
        if rules is None:
            return ReplayReport(decision_id=decision_id, reproduced=False, differences=(
                f"$.revisions.rule_bundle: bundle {recorded.revisions.rule_bundle} is not in the "
                "decision log",))  # fmt: skip
        request = recorded.request
        graph = self.engine.user_graph(request.user_id, as_of=recorded.as_of_seq)
        replayed = self._decide(rules, request.user_id, request.domain, dict(request.context),
                                request.decision or None, graph, recorded.as_of_seq,
                                recorded.decided_at, decision_id)  # fmt: skip
        found += [str(d) for d in differences(recorded, replayed)]
        return ReplayReport(decision_id=decision_id, reproduced=not found,
                            differences=tuple(found), replayed=replayed)  # fmt: skip

    def _rules_for(self, digest: str) -> Rules | None:
        if digest == self.rules.digest:
            return self.rules
        if digest not in self._replay_rules:
            sources = self.log.bundle(digest)
            if sources is None:
                return None
            try:
                self._replay_rules[digest] = compile_rules(sources, self.engine)
            except MemkgError:
                return None
        return self._replay_rules[digest]

    def load(self, path: Path | None = None) -> Rules:
        return compile_rules(read_sources(path or self.engine.config.rules_dir), self.engine)


def graph_view(graph: UserGraph, now: datetime, engine: Engine, domain: str,
               overrides: list[dict[str, Any]] | None = None) -> GraphView:  # fmt: skip
    return WeightedGraphView(graph, now, engine.config.weights, domain, overrides or ())
