"""The record of one decision: status from the hit policy, the default and frozen keys, and
the explanation tree. Pure: everything it needs is handed in."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from memkg.arbitration.hit_policy import arbitrate
from memkg.explain import build_explanation
from memkg.model.decision import (
    Arbitration,
    Decision,
    DecisionRequest,
    DecisionStatus,
    Output,
    Result,
    Revisions,
)
from memkg.model.explanation import MemoryNode
from memkg.rules.evaluator import Evaluation
from memkg.rules.kinds.checks import passes
from memkg.rules.snapshot import DecisionInput
from memkg.rules.spec import RuleBundle, RuleTable


def record_decision(
    bundle: RuleBundle,
    revisions: Revisions,
    decision_id: str,
    request: DecisionRequest,
    as_of: int,
    now: datetime,
    table: RuleTable | None,
    inp: DecisionInput | None,
    evaluation: Evaluation | None,
    problems: list[str],
    timings: dict[str, float],
    memory: Sequence[MemoryNode] = (),
    *,
    memory_off: bool = False,
    merged_ids: Sequence[str] = (),
) -> Decision:
    """Statuses: ``invalid_input`` (problems with the request), ``hit_policy_violation``,
    ``decided`` (a rule or the table's default), ``no_match``; ``needs_review`` replaces
    ``decided``/``no_match`` when a key the table reads is frozen.

    Only ``decided`` carries the rules' action. Any other status carries no action, or the
    safe action its domain declares for it (``status_actions`` in ``domain.yaml``); what the
    rules would have proposed stays in the explanation, never in ``result.action``."""
    arbitration, result, default = None, None, None
    if evaluation is not None and table is not None and inp is not None:
        arbitration, output = arbitrate(table.hit_policy, evaluation.candidates)
        if output is not None and table.hit_policy.kind == "collect":
            arbitration, output = _declared(bundle, table, arbitration, output)
        chosen = [c for c in evaluation.candidates if c.rule_id in arbitration.selected]
        if arbitration.violation:
            problems = [*problems, arbitration.violation]
            result = Result(status=DecisionStatus.HIT_POLICY_VIOLATION)
        elif output is not None:
            result = Result(
                status=DecisionStatus.DECIDED,
                action=output.action,
                parameters=output.parameters,
                urgency=output.urgency,
                reason_codes=tuple(c.reason_code for c in chosen),
                message="; ".join(c.message for c in chosen),
            )
        elif table.default is not None:
            out = table.default.output
            default = table.default.explain
            result = Result(
                status=DecisionStatus.DECIDED,
                action=out.action,
                parameters=out.parameters,
                urgency=out.urgency,
                reason_codes=(table.default.reason_code,),
                message=default,
                default_used=True,
            )
        else:
            result = Result(status=DecisionStatus.NO_MATCH)
        if inp.frozen_keys and result.status is not DecisionStatus.HIT_POLICY_VIOLATION:
            # a key held back to ask first (a session's strong conflict) waits for the user,
            # not a reviewer: its memory node is provisional and carries the question
            asking = {m.key: m.question for m in memory
                      if m.outcome == "provisional" and m.question}  # fmt: skip
            problems = [
                *problems,
                *(
                    f"{k} holds strongly conflicting claims of this session: ask the user "
                    f"first ({asking[k]})"
                    if k in asking
                    else f"{k} is frozen until a reviewer settles conflicting claims"
                    for k in inp.frozen_keys
                ),
            ]
            result = result.model_copy(update={"status": DecisionStatus.NEEDS_REVIEW})
    if result is None:
        result = Result(status=DecisionStatus.INVALID_INPUT)
    spec = bundle.domains.get(request.domain)
    proposed, safe = None, None
    if result.status is not DecisionStatus.DECIDED:
        proposed = result.action
        safe = spec.status_actions.get(result.status.value) if spec else None
        result = Result(
            status=result.status,
            action=safe.action if safe else None,
            parameters=dict(safe.parameters) if safe else {},
            urgency=safe.urgency if safe else None,
            reason_codes=result.reason_codes,
        )
        default = None
    explanation = build_explanation(
        decision_id=decision_id,
        request=request,
        decided_at=now,
        as_of_seq=as_of,
        rule_bundle=revisions.rule_bundle,
        arbitration=arbitration,
        result=result,
        fired=evaluation.fired if evaluation else (),
        why_not=evaluation.why_not if evaluation else (),
        left_out=inp.left_out if inp else (),
        context=inp.context if inp else request.context,
        describe={a: s.description for a, s in spec.actions.items()} if spec else {},
        default=default,
        problems=problems,
        memory=memory,
        proposed=proposed,
        status_action=f"{spec.file}: status_actions.{result.status.value}"
        if safe and spec
        else None,
        memory_off=memory_off,
        merged_ids=merged_ids,
    )
    return Decision(
        decision_id=decision_id,
        request=request,
        as_of_seq=as_of,
        decided_at=now,
        revisions=revisions,
        candidates=evaluation.candidates if evaluation else (),
        arbitration=arbitration,
        result=result,
        explanation=explanation,
        left_out=inp.left_out if inp else (),
        problems=tuple(problems),
        memory_off=memory_off,
        merged_ids=tuple(merged_ids),
        read=inp.read if inp else (),
        timings=timings,
    )


def _declared(
    bundle: RuleBundle, table: RuleTable, arbitration: Arbitration, output: Output
) -> tuple[Arbitration, Output | None]:
    """A ``collect`` output whose aggregate no longer fits the parameter its action declares
    (a sum past a ``maximum``): a hit-policy violation, as every rule's own parameters fit
    (lint checks them) but their sum is worked out only when the decision is made."""
    spec = bundle.domains.get(table.domain)
    for name, value in output.parameters.items():
        check = spec.parameter_validator(output.action, name) if spec is not None else None
        if check is not None and not passes(check, value):
            violation = (f"collect: {name}={value!r:.60} does not fit what {output.action} "
                         f"declares for it ({json.dumps(check.schema)[:120]})")  # fmt: skip
            return arbitration.model_copy(update={"selected": (), "violation": violation}), None
    return arbitration, output
