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
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from memkg.arbitration.review import Review, reviews_from
from memkg.decisions import DecisionLog, differences
from memkg.engine.decision_graph import (
    WeightedGraphView,
    fixture_graph,
    memory_nodes,
    reviewed_facts,
    verdicts,
)
from memkg.engine.decision_record import record_decision
from memkg.engine.rule_bundle import Rules, RulesRefused, compile_rules
from memkg.errors import MemkgError
from memkg.explain import render
from memkg.graph.projection import UserGraph
from memkg.model.decision import Decision, DecisionRequest, Revisions
from memkg.model.explanation import MemoryNode
from memkg.model.fact import Fact, FactStatus
from memkg.rules.evaluator import Evaluation
from memkg.rules.loader import RuleFolders, read_sources
from memkg.rules.snapshot import DecisionInput, GraphView, build_input
from memkg.rules.spec import RuleTable
from memkg.rules.validation import bounded_context, request_problems

__all__ = ["IntentLayer", "ReplayReport", "Rules", "RulesRefused", "compile_rules", "graph_view"]

if TYPE_CHECKING:
    from memkg.engine.decisions import DecisionLayer as Engine


class ReplayReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    reproduced: bool
    differences: tuple[str, ...] = ()
    replayed: Decision | None = None


class IntentLayer:
    def __init__(self, engine: Engine, log: DecisionLog) -> None:
        self.engine = engine
        self.log = log
        self._lock = threading.Lock()
        self._rules: Rules | None = None
        self._replay_rules: dict[str, Rules] = {}
        self._facts_cache: dict[tuple[str, str], tuple[tuple[int, int, int], list[Fact]]] = {}
        self._revisions: dict[str, Revisions] = {}

    @property
    def rules(self) -> Rules:
        if self._rules is None:
            with self._lock:
                if self._rules is None:
                    self._rules = compile_rules(
                        read_sources(self.engine.layers.rule_dirs()), self.engine
                    )
                    self.log.save_bundle(self._rules.digest, self._rules.bundle.sources)
        return self._rules

    def swap(self, rules: Rules) -> None:
        self.log.save_bundle(rules.digest, rules.bundle.sources)
        with self._lock:
            self._rules = rules

    def revisions(self, rules: Rules) -> Revisions:
        """Kept per bundle: the schemas and the ontology are loaded once per engine."""
        found = self._revisions.get(rules.digest)
        if found is None:
            found = self._revisions[rules.digest] = Revisions(
                rule_bundle=rules.digest,
                schema_versions=self.engine.registry.versions(),
                ontology=self.engine.ontology.digest,
            )
        return found

    # -- deciding ---------------------------------------------------------------------------

    def decide(
        self,
        user_id: str,
        domain: str,
        context: Mapping[str, Any] | None = None,
        decision: str | None = None,
        *,
        session_id: str | None = None,
        turn: str | None = None,
    ) -> Decision:
        engine = self.engine
        with engine._lock:
            head = engine.store.head()
            graph = engine.user_graph(user_id)
            now, decision_id = engine.clock.now(), engine.clock.new_id("dec")
            made = self._decide(
                self.rules,
                user_id,
                domain,
                bounded_context(context or {}),
                decision,
                graph,
                max(head, graph.seq),
                now,
                decision_id,
                session_id=session_id,
                turn=turn,
            )
        self.log.append(made)
        return made

    def _decide(
        self,
        rules: Rules,
        user_id: str,
        domain: str,
        context: dict[str, Any],
        decision: str | None,
        graph: UserGraph,
        as_of: int,
        now: datetime,
        decision_id: str,
        *,
        session_id: str | None = None,
        turn: str | None = None,
    ) -> Decision:
        started = time.perf_counter()
        bundle = rules.bundle
        table = bundle.table(domain, decision)
        name = table.name if table else (decision or "")
        request = DecisionRequest(user_id=user_id, domain=domain, decision=name, context=context,
                                  session_id=session_id, turn=turn)  # fmt: skip
        problems = request_problems(bundle, domain, decision, table, context)
        inp: DecisionInput | None = None
        evaluation: Evaluation | None = None
        memory: tuple[MemoryNode, ...] = ()
        if table is not None and not problems:
            inp, memory = self._prepare(rules, table, user_id, context, graph, as_of, now,
                                        session_id=session_id, turn=turn)  # fmt: skip
            evaluation = rules.evaluator.evaluate(table, inp)
        timings = {"evaluate_ms": round((time.perf_counter() - started) * 1000, 3)}
        return self._record(
            rules, decision_id, request, as_of, now, table, inp, evaluation, problems, timings,
            memory, memory_off=graph.memory.memory_off is not None,
            merged_ids=graph.memory.merged_ids,
        )  # fmt: skip

    def _input(
        self,
        rules: Rules,
        table: RuleTable,
        user_id: str,
        context: dict[str, Any],
        graph: UserGraph,
        as_of: int,
        now: datetime,
        *,
        session_id: str | None = None,
        turn: str | None = None,
    ) -> DecisionInput:
        """What the rules may read."""
        return self._prepare(rules, table, user_id, context, graph, as_of, now,
                             session_id=session_id, turn=turn)[0]  # fmt: skip

    def _prepare(
        self,
        rules: Rules,
        table: RuleTable,
        user_id: str,
        context: dict[str, Any],
        graph: UserGraph,
        as_of: int,
        now: datetime,
        *,
        session_id: str | None = None,
        turn: str | None = None,
    ) -> tuple[DecisionInput, tuple[MemoryNode, ...]]:
        """What the rules may read, and the arbitration record of the keys they read.

        Every key the table reads is resolved by the very function ``Engine.resolve`` uses,
        for the same session, turn and request context; only the claims that hold take part
        (``verdicts``), so a decision's value for a key is always what ``resolve`` says.
        """
        engine = self.engine
        entity = frozenset(k for d, k in engine.entity_keys if d == table.domain)
        plan = rules.evaluator.plan(table)
        keys = plan.keys | entity
        facts = self._live_facts(graph, table.domain)
        view = WeightedGraphView(graph, now, engine.weights, table.domain)
        reviews = self._reviews(graph.user_id, graph.seq, as_of)
        resolutions = [
            engine._resolution(
                graph, reviews, spec, now, session_id=session_id, turn=turn, context=context
            )
            for key in sorted(keys)
            if (spec := engine.registry.spec(table.domain, key)) is not None
        ]
        held = [*facts, *reviewed_facts(resolutions, reviews, engine.registry.spec)]
        inp = build_input(
            table,
            user_id,
            held,
            context,
            now,
            view,
            keys=keys,
            verdicts=verdicts(resolutions),
            wanted=plan.paths,
        )
        return inp, memory_nodes([r for r in resolutions if r.key in plan.keys])

    def _live_facts(self, graph: UserGraph, domain: str) -> list[Fact]:
        """The domain's facts but superseded history, kept per user until the stream moves."""
        key = (graph.user_id, domain)
        cached = self._facts_cache.get(key)
        if cached is None or cached[0] != (graph.version, graph.seq, len(graph.memory.facts)):
            facts = [
                f
                for f in graph.memory.facts.values()
                if f.domain == domain and f.status is not FactStatus.SUPERSEDED
            ]
            cached = ((graph.version, graph.seq, len(graph.memory.facts)), facts)
            if len(self._facts_cache) > 1024:
                self._facts_cache.clear()
            self._facts_cache[key] = cached
        return cached[1]

    def _reviews(self, user_id: str, seq: int, as_of: int) -> list[Review]:
        """The user's reviews as of a log position.

        At the head of the log (every decision made now) they are the engine's, kept current
        event by event; only a replay reads the stream up to its position.
        """
        if as_of >= self.engine.store.head():
            return self.engine._reviews(user_id, seq)
        return list(reviews_from(self.engine._read_stream(user_id, up_to_seq=as_of)).values())

    def _record(
        self,
        rules: Rules,
        decision_id: str,
        request: DecisionRequest,
        as_of: int,
        now: datetime,
        table: RuleTable | None,
        inp: DecisionInput | None,
        evaluation: Evaluation | None,
        problems: list[str],
        timings: dict[str, float],
        memory: tuple[MemoryNode, ...] = (),
        *,
        memory_off: bool = False,
        merged_ids: tuple[str, ...] = (),
    ) -> Decision:
        return record_decision(
            rules.bundle,
            self.revisions(rules),
            decision_id,
            request,
            as_of,
            now,
            table,
            inp,
            evaluation,
            problems,
            timings,
            memory,
            memory_off=memory_off,
            merged_ids=merged_ids,
        )

    # -- after the fact ---------------------------------------------------------------------

    def explain(self, decision_id: str, fmt: str = "text") -> str:
        return render(self.log.get(decision_id).explanation, fmt)

    def replay(self, decision_id: str) -> ReplayReport:
        recorded = self.log.get(decision_id)
        found: list[str] = []
        rules = self._rules_for(recorded.revisions.rule_bundle)
        if rules is None:
            return ReplayReport(
                decision_id=decision_id,
                reproduced=False,
                differences=(
                    f"$.revisions.rule_bundle: bundle {recorded.revisions.rule_bundle} "
                    "is not in the decision log",
                ),
            )
        request = recorded.request
        graph = (
            self.engine.user_graph(request.user_id, as_of=recorded.as_of_seq)
            if recorded.as_of_seq > 0  # position 0 is the empty log ("as of 0" reads all)
            else fixture_graph(request.user_id, [], self.engine.knowledge, self.engine.entity_keys)
        )
        replayed = self._decide(
            rules,
            request.user_id,
            request.domain,
            dict(request.context),
            request.decision or None,
            graph,
            recorded.as_of_seq,
            recorded.decided_at,
            decision_id,
            session_id=request.session_id,
            turn=request.turn,
        )
        found += [str(d) for d in differences(recorded, replayed)]
        return ReplayReport(
            decision_id=decision_id,
            reproduced=not found,
            differences=tuple(found),
            replayed=replayed,
        )

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

    def load(self, path: RuleFolders | None = None) -> Rules:
        return compile_rules(read_sources(path or self.engine.layers.rule_dirs()), self.engine)


def graph_view(
    graph: UserGraph,
    now: datetime,
    engine: Engine,
    domain: str,
    overrides: list[dict[str, Any]] | None = None,
) -> GraphView:
    return WeightedGraphView(graph, now, engine.weights, domain, overrides or ())
