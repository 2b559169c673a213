"""The decision layer: rules propose, the arbiter decides, every decision is logged."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from memkg.engine.arbitration import ArbitrationLayer
from memkg.engine.intent import IntentLayer, ReplayReport, RulesRefused
from memkg.engine.intent_cases import run_rule_cases
from memkg.engine.rules_diff import Bundle, RulesDiffRefused, rules_diff
from memkg.errors import ValidationFailed
from memkg.model.decision import Decision
from memkg.rules.cases import CasesReport
from memkg.rules.diff import RulesDiffReport
from memkg.validate.validator import DecisionEnvelope, envelope_report


class DecisionLayer(ArbitrationLayer):
    """Decisions, explanations and replay (logic in ``memkg.rules``, ``explain``, ``decisions``).

    See ``memkg.Engine``.
    """

    @cached_property
    def intent(self) -> IntentLayer:
        """Rule bundle, decisions and their log; rules are linted on first use."""
        return IntentLayer(self, self.decision_log)

    def decide(
        self, user_id: str, domain: str, context: Mapping[str, Any] | None = None,
        *, decision: str | None = None, session_id: str | None = None, turn: str | None = None,
    ) -> Decision:  # fmt: skip
        """What the agent should do for the user now, with the reason; logged for replay.

        ``session_id`` and ``turn`` (the turn's ``source_ref``) say where the decision is made:
        a session note counts only in its session, a turn instruction only in its turn, both
        above long-term memory there; every key the rules read holds the value ``resolve``
        gives for the same user, domain, key, session, turn and context.

        ``user_id``, ``domain``, ``decision``, ``session_id`` and ``turn`` meet the envelope
        rules of a write (refused with ``ValidationFailed``, nothing logged); a context the
        rules refuse makes an ``invalid_input`` decision, logged in bounded form.
        """
        self._check_args(user_id=user_id, domain=domain, context=context, decision=decision,
                         session_id=session_id, turn=turn)  # fmt: skip
        report = envelope_report(
            DecisionEnvelope,
            {"user_id": user_id, "domain": domain, "decision": decision, "session_id": session_id,
             "turn": turn},
        )  # fmt: skip
        if not report.ok:
            raise ValidationFailed(report)
        return self.intent.decide(
            user_id, domain, context, decision, session_id=session_id, turn=turn
        )

    def explain(self, decision_id: str, fmt: str = "text") -> str:
        """A logged decision's explanation as ``text``, ``md`` or ``json``."""
        self._check_args(decision_id=decision_id)
        return self.intent.explain(decision_id, fmt)

    def replay(self, decision_id: str) -> ReplayReport:
        """Re-make a logged decision as of its log position, clock and rules; compare."""
        self._check_args(decision_id=decision_id)
        return self.intent.replay(decision_id)

    def decisions(self, user_id: str, *, limit: int | None = None) -> list[Decision]:
        self._check_args(user_id=user_id)
        return self.decision_log.for_user(user_id, limit=limit)

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
        return rules_diff(self, old, new, replay=replay, user=user, allow=allow)

    def reload_rules(
        self, path: str | Path | None = None, *, require_diff: int | None = None,
        allow: Collection[str] = (),
    ) -> CasesReport:  # fmt: skip
        """Lint, compile and test a rule bundle, then swap it in; refuse it if anything fails.

        With ``require_diff=N`` the last N logged decisions are also re-made under the rules in
        use and the new ones (``rules_diff``), and a BLOCK verdict refuses the bundle
        (``RulesDiffRefused``, with the report); ``allow`` as for ``rules_diff``.
        """
        folder = Path(path) if path is not None else self.layers.rule_dirs()
        rules = self.intent.load(folder)
        report = run_rule_cases(self.intent, rules, folder)
        if not report.passed:
            failures = [f"{r.case.file}:{r.case.line} {r.case.name}: {'; '.join(r.failures)}"
                        for r in report.results if not r.passed]  # fmt: skip
            raise RulesRefused(f"rule cases failed ({len(failures)} case(s), "
                               f"{len(report.findings)} problem(s)); the rules in use stay",
                               report.findings, failures)  # fmt: skip
        if require_diff is not None:
            diff = rules_diff(self, self.intent.rules, rules, replay=require_diff, allow=allow)
            if diff.verdict == "BLOCK":
                raise RulesDiffRefused(diff)
        self.intent.swap(rules)
        return report
