"""The trace of one request, built from what the stage returned (``Profile``, ``RecallResult``,
``Decision``): the memories it considered, their scores, what was dropped and why, and what
came out. Ids and scores only: no memory value, and free text (the prompt, a recall's query)
only as its SHA-256."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache

from memkg.events.stored import Shape
from memkg.lifecycle.inject import Profile, ProfileItem
from memkg.lifecycle.recall import RecallResult
from memkg.model.decision import Decision
from memkg.model.trace import MAX_ITEMS, MAX_REASON_CHARS, Trace, TraceItem
from memkg.rules.validation import bounded_context

__all__ = ["decision_trace", "profile_trace", "recall_trace", "sha256"]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _reason(text: str | None) -> str | None:
    return None if text is None else text[:MAX_REASON_CHARS]


def _bounded(items: Iterable[TraceItem]) -> tuple[tuple[TraceItem, ...], int, dict[str, int]]:
    """Used items first, then by score; at most ``MAX_ITEMS`` listed, all counted."""
    every = sorted(items, key=lambda i: (not i.used, -(i.score or 0.0), i.ref))
    used = sum(i.used for i in every)
    counts = {"considered": len(every), "used": used, "dropped": len(every) - used}
    return tuple(every[:MAX_ITEMS]), max(0, len(every) - MAX_ITEMS), counts


def _profile_ref(item: ProfileItem) -> str:
    """A profile item's ref without its context values (stored data, free text at times): a
    fact's item as ``<section ref>:<key>``, with ``[context]`` when a context scoped it."""
    if item.key is None:
        return item.ref  # a note's id
    prefix = item.ref.split(":", 1)[0]
    scoped = "[context]" if item.ref.startswith(f"{prefix}:{item.key}[") else ""
    return f"{prefix}:{item.key}{scoped}"


def profile_trace(trace_id: str, now: datetime, user_id: str, domain: str, *,
                  session_id: str | None, profile: Profile) -> Trace:  # fmt: skip
    items = [
        *(TraceItem(ref=_profile_ref(i), kind=i.section, key=i.key, score=round(i.weight, 4),
                    used=True)
          for i in profile.included),
        *(TraceItem(ref=_profile_ref(i), kind=i.section, key=i.key, score=round(i.weight, 4),
                    used=False, reason="over the token budget: lowest weight goes first")
          for i in profile.dropped),
    ]  # fmt: skip
    listed, unlisted, counts = _bounded(items)
    shown = sorted({f for i in (*profile.included, *profile.dropped) for f in i.facts})
    return Trace(
        trace_id=trace_id, operation="render_profile", user_id=user_id, domain=domain,
        created_at=now, request=bounded_context({"budget": profile.budget,
                                                 "session_id": session_id}),
        items=listed, unlisted=unlisted, counts=counts,
        output={"tokens": profile.tokens, "budget": profile.budget, "counter": profile.counter,
                "sha256": sha256(profile.text),
                # named, so that a purge of any of them takes the trace
                "read": shown},
    )  # fmt: skip


def recall_trace(trace_id: str, now: datetime, user_id: str, domain: str | None, *,
                 query: str, k: int, result: RecallResult,
                 session_id: str | None = None) -> Trace:  # fmt: skip
    """The query is kept as its SHA-256 and length only: it may carry what the user never
    asked memkg to keep."""
    items = []
    weights = result.weights
    # what recall's min_relevance bound reads: the larger of the weighted matching scores
    matchers = [m for m in ("semantic", "relevance") if getattr(weights, m, 0) > 0] or [
        "semantic", "relevance"]  # fmt: skip
    for c in result.candidates:
        scores = {n: float(v) for n, v in c.scores.model_dump().items()
                  if isinstance(v, int | float)}  # fmt: skip
        why = None
        if not c.injected:
            matched = max(scores.get(m, 0.0) for m in matchers)
            # which kind of entity clashed, not which entities: a trace holds no values
            clashed = (
                f"names another {' and another '.join(c.clashes)} than the query"
                if c.clashes
                else None
            )
            if c.standing == "contested":
                clashed = "its key is frozen for review: conflicting claims"
            why = clashed or (
                "too little match with the query"
                if matched < weights.min_relevance
                else f"below the top {k}"
            )
        items.append(TraceItem(ref=c.ref, kind=c.kind, score=scores.get("total"), scores=scores,
                               used=c.injected, reason=_reason(why)))  # fmt: skip
    listed, unlisted, counts = _bounded(items)
    return Trace(
        trace_id=trace_id, operation="recall", user_id=user_id, domain=domain, created_at=now,
        request=bounded_context({
            "query_sha256": sha256(query), "query_chars": len(query), "k": k,
            **({"session_id": session_id} if session_id is not None else {}),
        }),
        items=listed, unlisted=unlisted, counts=counts,
        output={"injected": list(result.injected), "semantic_index": result.semantic_index},
    )  # fmt: skip


@lru_cache(maxsize=4096)
def _binding(ref: str, used: bool, reason: str | None) -> TraceItem:
    """A rule binding's item: decisions for a user mostly bind the same facts to the same
    rules, so the frozen item is built once and shared."""
    return TraceItem(ref=ref, kind="binding", used=used, reason=reason)


_ITEMS: Shape[TraceItem] = Shape(TraceItem, {})
_CLAIM_FIELDS = _ITEMS.fields_set(("ref", "kind", "key", "score", "used", "reason"))


def _claim(ref: str, key: str, score: float, used: bool, reason: str | None) -> TraceItem:
    """A claim's item, as ``TraceItem(ref=..., kind="claim", key=..., score=..., used=...,
    reason=...)`` validates it: the values come from the explanation's validated nodes, of
    the types the fields hold, so it is built without validating them again (``Shape``)."""
    values = _ITEMS.template.copy()
    values.update(ref=ref, kind="claim", key=key, score=score, scores={}, used=used,
                  reason=reason)  # fmt: skip
    return _ITEMS.build(values, _CLAIM_FIELDS)


def decision_trace(trace_id: str, decision: Decision) -> Trace:
    """The memories a decision read: each key's claims as arbitration scored them, what the
    rules bound, and what was left out and why."""
    items: dict[str, TraceItem] = {}
    arbitration = decision.arbitration
    selected = set(arbitration.selected) if arbitration else set()
    suppressed = {s.rule_id: s.reason for s in arbitration.suppressed} if arbitration else {}
    for node in decision.explanation.memory:
        for claim in node.claims:
            ref = f"fact:{claim.fact_id}"
            items[ref] = _claim(ref, node.key, claim.score, claim.standing == "won",
                                None if claim.standing == "won" else
                                _reason(f"{claim.standing}: {claim.reason}"))  # fmt: skip
    for candidate in decision.candidates:
        used = candidate.rule_id in selected
        why = None if used else suppressed.get(candidate.rule_id, "its rule was not selected")
        reason = _reason(f"rule {candidate.rule_id}: {why}" if why else None)
        for binding in candidate.bindings:
            if binding.ref != "context":
                items[binding.ref] = _binding(binding.ref, used, reason)
    for left in decision.left_out:
        detail = f": {left.detail}" if left.detail else ""
        items.setdefault(left.ref, TraceItem(ref=left.ref, kind=left.kind, key=left.key,
                                             used=False,
                                             reason=_reason(left.reason + detail)))  # fmt: skip
    listed, unlisted, counts = _bounded(items.values())
    request = decision.request
    return Trace(
        trace_id=trace_id, operation="decide", user_id=request.user_id, domain=request.domain,
        created_at=decision.decided_at,
        # the context as the decision log holds it: already in bounded form
        request={"decision": request.decision, "context": request.context,
                 "session_id": request.session_id, "turn": request.turn},
        items=listed, unlisted=unlisted, counts=counts,
        output={"decision_id": decision.decision_id, "status": decision.result.status.value,
                "action": decision.result.action, "rules": sorted(selected),
                # named, so that a purge of any of them takes the trace with the decision
                "read": list(decision.read or ())},
    )  # fmt: skip
