"""Assembles the explanation tree from what the rules found and what the arbiter chose."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memkg.model.decision import Arbitration, DecisionRequest, LeftOut, Result
from memkg.model.explanation import (
    ContextValue,
    Explanation,
    LeftOutNode,
    MemoryNode,
    RuleNode,
    SuppressedNode,
    WhyNotNode,
)

_HIDDEN_CONTEXT = {"today"}


def _summary(
    result: Result,
    describe: Mapping[str, str],
    problems: Sequence[str],
    proposed: str | None,
    where: str | None,
) -> str:
    status = result.status.value
    if status == "invalid_input":
        text = "The request was refused: " + "; ".join(problems)
    elif status == "hit_policy_violation" and any(p.startswith("collect: ") for p in problems):
        # no rule disagreed: what they gave, added up, is past what the action declares
        text = "The rules' answers, collected, do not fit the action: " + "; ".join(problems)
    elif status == "hit_policy_violation":
        text = "The rules disagree and the table allows only one answer: " + "; ".join(problems)
    elif status == "no_match":
        text = "No rule applies to this situation, and the rules give no default"
    elif status == "needs_review":
        held = f" (the rules would propose {proposed}, held back)" if proposed else ""
        text = "Needs review before acting: " + "; ".join(problems) + held
    else:
        action = describe.get(result.action or "", result.action or "")
        text = f"{action} (urgency: {result.urgency.value})" if result.urgency else action
        return f"{text}. {result.message}" if result.message else text
    if result.action is None:
        return f"{text.rstrip('.')}. No action: act on nothing until this is settled."
    urgency = f", urgency {result.urgency.value}" if result.urgency else ""
    return (
        f"{text.rstrip('.')}. The safe action {where} declares for {status}: "
        f"{result.action}{urgency}."
    )


def build_explanation(
    *,
    decision_id: str,
    request: DecisionRequest,
    decided_at: datetime,
    as_of_seq: int,
    rule_bundle: str,
    arbitration: Arbitration | None,
    result: Result,
    fired: Sequence[RuleNode],
    why_not: Sequence[WhyNotNode],
    left_out: Sequence[LeftOut],
    context: Mapping[str, Any],
    describe: Mapping[str, str],
    default: str | None = None,
    problems: Sequence[str] = (),
    memory: Sequence[MemoryNode] = (),
    proposed: str | None = None,
    status_action: str | None = None,
    memory_off: bool = False,
    merged_ids: Sequence[str] = (),
) -> Explanation:
    """``describe`` maps action names to the words the domain declares for them."""
    by_id = {node.rule_id: node for node in fired}
    selected = tuple(by_id[r] for r in arbitration.selected) if arbitration else ()
    suppressed = tuple(
        SuppressedNode(rule=by_id[s.rule_id], beaten_by=s.by, reason=s.reason)
        for s in (arbitration.suppressed if arbitration else ())
    )
    if arbitration is not None and arbitration.violation:
        suppressed += tuple(
            SuppressedNode(rule=by_id[r], beaten_by=(), reason=arbitration.violation)
            for r in arbitration.matched
        )
    shown = tuple(
        ContextValue(field=k, value=v)
        for k, v in sorted(context.items())
        if k not in _HIDDEN_CONTEXT and k != "local_minutes"
    )
    return Explanation(
        decision_id=decision_id,
        user_id=request.user_id,
        domain=request.domain,
        decision=request.decision,
        status=result.status.value,
        action=result.action,
        urgency=result.urgency.value if result.urgency else None,
        parameters=dict(result.parameters),
        summary=_summary(result, describe, problems, proposed, status_action),
        policy=arbitration.policy.describe() if arbitration else "",
        decided_at=decided_at,
        # a request may send one (refused: derived from the clock) of any JSON type
        local_time=clock if isinstance(clock := context.get("local_time"), str) else None,
        timezone=zone if isinstance(zone := context.get("timezone"), str) else None,
        context=shown,
        selected=selected,
        default=default,
        suppressed=suppressed,
        why_not=tuple(why_not),
        left_out=tuple(LeftOutNode(**lo.model_dump()) for lo in left_out),
        memory=tuple(memory),
        problems=tuple(problems),
        memory_off=memory_off,
        merged_ids=tuple(merged_ids),
        status_action=result.action if status_action else None,
        as_of_seq=as_of_seq,
        rule_bundle=rule_bundle,
    )
