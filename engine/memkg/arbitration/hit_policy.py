"""Which action wins when several rules of a table match: the table's hit policy, applied purely.

Policy, in order:

1. Candidates are taken in the order of their rules in the file (``rule_index``), never in the
   order the matcher reported them, so the same matches always give the same choice.
2. ``unique``: at most one rule may match. Two or more is a violation: nothing is selected,
   every match is recorded, and the decision says ``hit_policy_violation``.
3. ``first``: the earliest matching rule in the file wins; every later one is suppressed by it.
4. ``priority``: the action listed earliest in the table's priority list wins (for example
   ``deny > escalate > ask > approve``); among rules proposing that same action, the earliest
   in the file wins. A rule whose action is not in the list is a violation (lint prevents it).
5. ``collect``: every match is selected and folded into the table's collect action with the
   aggregate: ``list`` (each output), ``count``, or ``sum`` / ``min`` / ``max`` of a numeric
   parameter; the urgency is the highest any selected rule gives. A ``sum`` past the float
   range (no finite number) is a violation: nothing is selected.

Every matched rule ends up selected or suppressed, and every suppression names what beat it.

>>> from memkg.model.decision import Candidate, HitPolicy, Output
>>> ask = Candidate(rule_id="r.ask", rule_index=0, version=1, output=Output(action="ask"),
...                 reason_code="A", message="")
>>> deny = Candidate(rule_id="r.deny", rule_index=1, version=1, output=Output(action="deny"),
...                  reason_code="D", message="")
>>> record, output = arbitrate(HitPolicy(kind="priority", priority=("deny", "ask")), [ask, deny])
>>> record.selected, output.action, record.suppressed[0].reason
(('r.deny',), 'deny', 'ask ranks below deny in the priority list')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from memkg.model.decision import Arbitration, Candidate, HitPolicy, Output, Suppression, Urgency


def arbitrate(
    policy: HitPolicy, candidates: Sequence[Candidate]
) -> tuple[Arbitration, Output | None]:
    """The arbitration record and the winning output (None: nothing selected)."""
    ordered = sorted(candidates, key=lambda c: (c.rule_index, c.rule_id))
    matched = tuple(c.rule_id for c in ordered)
    if not ordered:
        return Arbitration(policy=policy, matched=(), selected=()), None
    if policy.kind == "unique":
        if len(ordered) > 1:
            violation = (
                f"unique: {len(ordered)} rules matched ({', '.join(matched)}); at most one may"
            )
            return Arbitration(
                policy=policy, matched=matched, selected=(), violation=violation
            ), None
        return Arbitration(policy=policy, matched=matched, selected=matched), ordered[0].output
    if policy.kind == "first":
        winner = ordered[0]
        lost = tuple(
            _suppressed(
                c.rule_id,
                winner.rule_id,
                f"{winner.rule_id} comes earlier in the file and matched first",
            )
            for c in ordered[1:]
        )
        record = Arbitration(
            policy=policy, matched=matched, selected=(winner.rule_id,), suppressed=lost
        )
        return record, winner.output
    if policy.kind == "priority":
        return _priority(policy, ordered, matched)
    return _collect(policy, ordered, matched)


def _priority(
    policy: HitPolicy, ordered: list[Candidate], matched: tuple[str, ...]
) -> tuple[Arbitration, Output | None]:
    unranked = [c.rule_id for c in ordered if c.output.action not in policy.priority]
    if unranked:
        violation = f"priority: {', '.join(unranked)} propose actions not in the priority list"
        return Arbitration(policy=policy, matched=matched, selected=(), violation=violation), None
    rank = {action: i for i, action in enumerate(policy.priority)}
    winner = min(ordered, key=lambda c: (rank[c.output.action], c.rule_index))
    lost = []
    for c in ordered:
        if c is winner:
            continue
        if c.output.action == winner.output.action:
            reason = f"same action as {winner.rule_id}, which comes earlier in the file"
        else:
            reason = f"{c.output.action} ranks below {winner.output.action} in the priority list"
        lost.append(_suppressed(c.rule_id, winner.rule_id, reason))
    record = Arbitration(
        policy=policy, matched=matched, selected=(winner.rule_id,), suppressed=tuple(lost)
    )
    return record, winner.output


@lru_cache(maxsize=4096)
def _suppressed(rule_id: str, by: str, reason: str) -> Suppression:
    """A loser's record: a table's decisions mostly suppress the same rules for the same
    reason, so the frozen record is built once and shared."""
    return Suppression(rule_id=rule_id, by=(by,), reason=reason)


def _collect(
    policy: HitPolicy, ordered: list[Candidate], matched: tuple[str, ...]
) -> tuple[Arbitration, Output | None]:
    aggregate = policy.aggregate or "list"
    parameters: dict[str, Any]
    if aggregate == "list":
        parameters = {
            "items": [
                {
                    "rule": c.rule_id,
                    "action": c.output.action,
                    **({"parameters": c.output.parameters} if c.output.parameters else {}),
                }
                for c in ordered
            ]
        }
    elif aggregate == "count":
        parameters = {"count": len(ordered)}
    else:
        numbers = [c.output.parameters.get(policy.of or "", 0) for c in ordered]
        folds: dict[str, Callable[[list[Any]], Any]] = {"sum": sum, "min": min, "max": max}
        fold = folds[aggregate]
        folded = fold(numbers)
        if isinstance(folded, float) and not math.isfinite(folded):
            # a sum past the float range: no record can hold it (JSON keeps it as null)
            violation = f"collect: the {aggregate} of {policy.of!r} is not a finite number"
            return Arbitration(policy=policy, matched=matched, selected=(),
                               violation=violation), None  # fmt: skip
        parameters = {policy.of or aggregate: folded}
    urgencies = [c.output.urgency for c in ordered if c.output.urgency is not None]
    urgency = max(urgencies, key=lambda u: u.rank) if urgencies else None
    output = Output(
        action=policy.action or "collect",
        parameters=parameters,
        urgency=Urgency(urgency) if urgency else None,
    )
    return Arbitration(policy=policy, matched=matched, selected=matched), output
