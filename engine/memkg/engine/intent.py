"""The intent stage, wired for ``Engine``: rules in files → decision → explanation → log.

``decide`` reads the user's graph at the current log position, lets arbitration say which
claims hold and which keys are frozen, evaluates the domain's rule table, applies its hit
policy and records everything. ``redecide`` makes a logged decision again as of its recorded
position and clock, over the graph it is handed: ``replay`` (``engine/replay.py``) hands it
memory as it stood, a migration's dry run memory as the plan would have left it. Rule
bundles are linted (and, on reload, their cases run) before use; a new bundle replaces the
old one in one assignment (``engine/rule_bundle.py``).

No decision outlives the memory it read: ``decide`` notes the store's purge count its graph
was read at, and ``_logged`` writes the decision only while that count holds; if a purge or
erasure ran meanwhile, the decision is made again on the memory as it now is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkg.arbitration.review import Review, reviews_from
from memkg.clock import TIMEZONE, Clock
from memkg.decisions import DecisionLog
from memkg.engine.arbitration import Arbiter
from memkg.engine.decision_graph import WeightedGraphView, memory_nodes, reviewed_facts, verdicts
from memkg.engine.decision_record import record_decision
from memkg.engine.erasure import SharedLog, shared_log
from memkg.engine.projections import Projections
from memkg.engine.rule_bundle import RuleBook, Rules, RulesRefused
from memkg.engine.setup import Setup, check_args
from memkg.errors import ConcurrencyConflict, NotFound, ValidationFailed
from memkg.events.store import EventStore
from memkg.graph.projection import UserGraph
from memkg.model.decision import RECORDER, Decision, DecisionRequest, Revisions
from memkg.model.explanation import MemoryNode
from memkg.rules.cases import CasesReport
from memkg.rules.evaluator import Evaluation
from memkg.rules.loader import RuleFolders
from memkg.rules.snapshot import DecisionInput, build_input
from memkg.rules.spec import RuleTable
from memkg.rules.validation import bounded_context, request_problems
from memkg.validate.validator import DecisionEnvelope, envelope_report

__all__ = ["Decider", "Rules", "RulesRefused"]

if TYPE_CHECKING:
    from memkg.engine.rules_diff import Bundle
    from memkg.rules.diff import RulesDiffReport


ASKS = 4
"""The recorder from which a session's strong conflict holds a decision back
(``decision_graph.verdicts``): a record an earlier one made is made again without it."""
LISTS_WHOLE = 5
"""The recorder from which a condition that holds on a list value whole shows it whole
(``evaluator.whole_lists``): a record an earlier one made shows the item it matched."""


@dataclass(eq=False, repr=False)
class Decider:
    """Decisions (logic in ``memkg.rules``, ``explain``, ``decisions``); see ``memkg.Engine``."""

    setup: Setup
    store: EventStore
    projections: Projections
    arbiter: Arbiter
    book: RuleBook
    log: DecisionLog
    clock: Clock
    lock: threading.RLock
    _sharing: tuple[object, SharedLog | None] = field(default=(None, None), init=False)
    """``log`` and whether it lives beside the events (``shared_log``), worked out once."""

    @property
    def rules(self) -> Rules:
        """The bundle in force; linted on first use."""
        return self.book.rules

    def load(self, path: RuleFolders | None = None) -> Rules:
        return self.book.load(path)

    def swap(self, rules: Rules) -> None:
        self.book.swap(rules)

    def revisions(self, rules: Rules) -> Revisions:
        return self.book.revisions(rules)

    def decide(
        self, user_id: str, domain: str, context: Mapping[str, Any] | None = None,
        *, decision: str | None = None, session_id: str | None = None, turn: str | None = None,
        trace_id: str | None = None,
    ) -> Decision:  # fmt: skip
        """A decision made and logged (``Engine.decide`` says what it does; the ``Tracer`` in
        front of it keeps the request's trace, whose id the record carries as ``trace_id``)."""
        check_args(user_id=user_id, domain=domain, context=context, decision=decision,
                   session_id=session_id, turn=turn)  # fmt: skip
        report = envelope_report(
            DecisionEnvelope,
            {"user_id": user_id, "domain": domain, "decision": decision, "session_id": session_id,
             "turn": turn},
        )  # fmt: skip
        if not report.ok:
            raise ValidationFailed(report, "decision request")
        registry = self.setup.registry
        if domain not in registry.domains():  # a typo, not a request the rules refuse
            raise NotFound(registry.unknown_key(domain, ""), code="domain.unknown")
        request = DecisionRequest(user_id=user_id, domain=domain, decision=decision or "",
                                  context=bounded_context(context or {}), session_id=session_id,
                                  turn=turn)  # fmt: skip
        decision_id, purges = "", -1
        for _ in range(self.setup.config.write_retries + 1):
            with self.lock, self.projections.pinned(user_id) as mark:
                head = self.store.head()
                graph = self.projections.graph(user_id)
                pin = mark()  # the purge count the graph read checked (never None after it)
                purges, now = pin[1] if pin is not None else -1, self.clock.now()
                decision_id = decision_id or self.clock.new_id("dec")  # kept when made again
                # the graph holds every event of the log up to ``head`` (read before it); its
                # reviews are read to the same position, whatever another process writes
                made = self._decide(self.rules, request, graph, max(head, graph.seq), now,
                                    decision_id,
                                    reviews=self.projections.reviews(user_id, graph))  # fmt: skip
            if trace_id is not None:
                made = made.model_copy(update={"trace_id": trace_id})
            if self._logged(made, purges):
                return made
        raise ConcurrencyConflict(
            user_id, purges, purges, code="decision.erased_meanwhile",
            message=f"a purge or erasure ran while each of {self.setup.config.write_retries + 1}"
            f" decisions for {user_id!r} was made: none is logged; try again",
        )  # fmt: skip

    def _logged(self, made: Decision, purges: int) -> bool:
        """Log ``made``, read at the store's purge count ``purges``, if no purge or erasure ran
        since; whether it was logged.

        A log beside the events checks the count in the insert's own transaction
        (``append_checked``). One kept apart is appended to, then the count read again under
        the engine's lock (an erasure in this process holds it throughout): if it moved, the
        decision is taken back out. One appended before another process's erasure committed
        is removed by that erasure's second pass (``Eraser``)."""
        log = self.log
        if self._sharing[0] is not log:
            self._sharing = (log, shared_log(self.store, log))
        shared = self._sharing[1]
        if shared is not None:
            return shared.append_checked(made, purges)
        log.append(made)
        with self.lock:
            if self.store.stream_mark(made.request.user_id)[1] == purges:
                return True
        log.remove(made.decision_id)
        return False

    def rules_diff(
        self, old: Bundle = None, new: Bundle = None, *, replay: int | None = 20,
        user: str | None = None, allow: Collection[str] = (),
    ) -> RulesDiffReport:  # fmt: skip
        """What swapping rule bundle ``old`` for ``new`` would do to logged decisions.

        The last ``replay`` logged decisions (or the user's, all of them with ``replay=None``)
        are each made under both bundles as of their log position and clock; the report says
        per decision whether status, action or reason changed, the rules responsible, and a
        verdict (PASS, WARN, BLOCK; ``memkg.rules.diff`` gives the policy). ``old`` defaults
        to the rules in use, ``new`` to the configured rule folders; either may be a folder.
        ``allow`` names rule tables (``domain/table``) or domains meant to change.
        """
        from memkg.engine.rules_diff import rules_diff

        return rules_diff(self, old, new, replay=replay, user=user, allow=allow)

    def reload_rules(
        self, path: str | Path | None = None, *, require_diff: int | None = None,
        allow: Collection[str] = (),
    ) -> CasesReport:  # fmt: skip
        """Lint, compile and test a rule bundle, then swap it in; refuse it if anything fails.

        ``path``: a rules folder, ``ROOT/rules`` (else ``rules.missing``; default: the roots').

        With ``require_diff=N`` the last N logged decisions are also re-made under the rules in
        use and the new ones (``rules_diff``), and a BLOCK verdict refuses the bundle
        (``RulesDiffRefused``, with the report); ``allow`` as for ``rules_diff``.
        """
        from memkg.engine.intent_cases import run_rule_cases
        from memkg.engine.rules_diff import RulesDiffRefused, rules_diff

        folder = Path(path) if path is not None else self.setup.layers.rule_dirs()
        with self.book.reloading:  # one reload at a time builds on the rules in force
            rules = self.book.load(folder)
            report = run_rule_cases(self, rules, folder)
            if not report.passed:
                failures = [f"{r.case.file}:{r.case.line} {r.case.name}: {'; '.join(r.failures)}"
                            for r in report.results if not r.passed]  # fmt: skip
                raise RulesRefused(f"rule cases failed ({len(failures)} case(s), "
                                   f"{len(report.findings)} problem(s)); the rules in use stay",
                                   report.findings, failures)  # fmt: skip
            if require_diff is not None:
                diff = rules_diff(self, self.rules, rules, replay=require_diff, allow=allow)
                if diff.verdict == "BLOCK":
                    raise RulesDiffRefused(diff)
            self.book.swap(rules)
        return report

    def redecide(
        self, rules: Rules, recorded: Decision, graph: UserGraph, *,
        reviews: Sequence[Review] | None = None, projections: Projections | None = None,
    ) -> Decision:  # fmt: skip
        """``recorded`` made again with ``rules`` over ``graph`` (and its ``reviews``, kept in
        ``projections``), as of the recorded position and clock, as its recorder decided."""
        return self._decide(rules, recorded.request, graph, recorded.as_of_seq, recorded.decided_at,
                            recorded.decision_id, reviews=reviews, projections=projections,
                            recorder=recorded.revisions.recorder or 1)  # fmt: skip

    def _decide(
        self, rules: Rules, request: DecisionRequest, graph: UserGraph, as_of: int,
        now: datetime, decision_id: str, *, reviews: Sequence[Review] | None = None,
        projections: Projections | None = None, recorder: int = RECORDER,
    ) -> Decision:  # fmt: skip
        started = time.perf_counter()
        bundle, domain, context = rules.bundle, request.domain, dict(request.context)
        table = bundle.table(domain, request.decision or None)
        request = request.model_copy(update={"decision": table.name if table else
                                             request.decision})  # fmt: skip
        problems = request_problems(bundle, domain, request.decision or None, table, context)
        inp: DecisionInput | None = None
        evaluation: Evaluation | None = None
        memory: tuple[MemoryNode, ...] = ()
        if table is not None and not problems:
            if reviews is None:
                reviews = reviews_as_of(self.projections, graph.user_id, as_of)
            inp, memory = self._prepare(rules, table, request.user_id, context, graph, now,
                                        reviews, projections=projections,
                                        session_id=request.session_id,
                                        turn=request.turn, ask_first=recorder >= ASKS)  # fmt: skip
            evaluation = rules.evaluator.evaluate(table, inp, lists_whole=recorder >= LISTS_WHOLE)
        timings = {"evaluate_ms": round((time.perf_counter() - started) * 1000, 3)}
        return record_decision(bundle, self.revisions(rules), decision_id, request, as_of, now,
                               table, inp, evaluation, problems, timings, memory,
                               memory_off=graph.memory.memory_off is not None,
                               merged_ids=graph.memory.merged_ids)  # fmt: skip

    def _input(
        self, rules: Rules, table: RuleTable, user_id: str, context: dict[str, Any],
        graph: UserGraph, now: datetime, *, session_id: str | None = None,
        turn: str | None = None,
    ) -> DecisionInput:  # fmt: skip
        """What the rules may read of ``graph`` (a current graph) at ``now``."""
        reviews = self.projections.reviews(user_id, graph)
        return self._prepare(rules, table, user_id, context, graph, now, reviews,
                             session_id=session_id, turn=turn)[0]  # fmt: skip

    def _prepare(
        self, rules: Rules, table: RuleTable, user_id: str, context: dict[str, Any],
        graph: UserGraph, now: datetime, reviews: Sequence[Review],
        *, projections: Projections | None = None, session_id: str | None = None,
        turn: str | None = None, ask_first: bool = True,
    ) -> tuple[DecisionInput, tuple[MemoryNode, ...]]:  # fmt: skip
        """What the rules may read, and the arbitration record of the keys they read.

        Every key the table reads is resolved by the very function ``Engine.resolve`` uses
        (``Arbiter.resolution``), for the same session, turn and request context; only the
        claims that hold take part (``verdicts``), so a decision's value for a key is always
        what ``resolve`` says. So is the user's ``timezone``, which the local clock is read
        in (unless the request gives one): a decision whose rules read the local clock reads
        the key (a frozen time zone holds it back). The memory record covers the keys the
        conditions read, the time zone, and, for a table with path conditions, every entity
        key (a path may start on any of their edges). Claims of other sessions take no part
        and are not listed as left out: they count only in their session, and a decision's
        record does not grow with the sessions the user had.
        """
        registry, entity_keys = self.setup.registry, self.setup.entity_keys
        entity = frozenset(k for d, k in entity_keys if d == table.domain)
        plan = rules.evaluator.plan(table)
        # the user's time zone, unless the request gives one: resolved as every key is, and
        # read (so a frozen one holds the decision back) when the rules read the local clock
        zone = frozenset({TIMEZONE}) if ("timezone" not in context and registry.spec(
            table.domain, TIMEZONE) is not None) else frozenset()  # fmt: skip
        read_keys = plan.keys | zone if plan.clock else plan.keys
        keys = read_keys | entity
        # the facts of the keys read and of the time zone, but another session's, which counts
        # only there: not weighed, shown or left out here
        facts = (projections or self.projections).live_facts(
            graph, table.domain, keys | {TIMEZONE}, session_id
        )
        # the claims of the keys read, in the session's scope: no other can be used (the
        # rules read no other key, and a claim out of scope is left out)
        view = WeightedGraphView(graph, now, self.setup.weights, table.domain, keys=keys,
                                 session_id=session_id)  # fmt: skip
        resolutions = [
            self.arbiter.resolution(
                graph, reviews, spec, now, session_id=session_id, turn=turn, context=context
            )
            for key in sorted(keys | zone)
            if (spec := registry.spec(table.domain, key)) is not None
        ]
        # the record of every key read: by a condition, for the local clock, or as a hop of a
        # path (any entity key's edge may be one: path conditions walk them all); a freeze
        # of one the decision depends on holds it back, of another key (or of the time zone,
        # when the rules do not read the clock) does not
        walked = entity if plan.paths else frozenset()
        shown = read_keys | zone | walked
        reviewed = reviewed_facts(resolutions, reviews, registry.spec)
        band = self.setup.reader.policy_of(table.domain).bands.freeze_above
        inp = build_input(table, user_id, [*facts, *reviewed], context, now, view, keys=keys,
                          verdicts=verdicts(resolutions, reviewed, band if ask_first else None),
                          wanted=plan.paths,
                          reuse=rules.evaluator.reuse, owner=graph.memory,
                          read_keys=read_keys, held_back=read_keys | walked)  # fmt: skip
        return inp, memory_nodes([r for r in resolutions if r.key in shown])


def reviews_as_of(projections: Projections, user_id: str, as_of: int) -> list[Review]:
    """The user's reviews as of a log position (a decision made now is handed the
    projections' reviews of its graph instead)."""
    return list(reviews_from(projections.read(user_id, up_to_seq=as_of)).values())
