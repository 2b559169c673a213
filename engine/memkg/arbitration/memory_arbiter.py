"""Which memory holds when the claims about one key disagree (DESIGN section 5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memkg.arbitration.claims import Claim
from memkg.arbitration.lineup import Entrant, Lineup
from memkg.arbitration.policy import Policy
from memkg.arbitration.questions import QuestionBook
from memkg.arbitration.resolution import Resolution
from memkg.arbitration.review import Review
from memkg.model.keyspec import KeySpec


def resolve(
    claims: Sequence[Claim],
    policy: Policy,
    now: datetime,
    spec: KeySpec,
    *,
    user_id: str,
    context: Mapping[str, str] | None = None,
    default: Any = None,
    review: Review | None = None,
    questions: QuestionBook | None = None,
    language: str | None = None,
    labels: Mapping[tuple[str, str], str] | None = None,
) -> Resolution:
    """Resolve one ``(user, domain, key, context)`` slot from its claims.

    Only the claims of this user, key and context slot (the context fields the key declares)
    take part; expired, retracted and restated claims do not; claims awaiting confirmation
    are listed and not counted. Policy, in order:

    1. Review: an open review keeps the key frozen; a resolved one holds the reviewer's
       value (``review_resolution``) until newer evidence arrives, which then competes with
       it as a claim of weight 1.
    2. Scope priority: the current turn's instruction beats the session notes, which beat
       long-term memory, which beats the role default (``scope_priority``, ``role_default``;
       ``no_evidence`` when there is neither claim nor default).
    3. Explicit change: the newest claim that states a change supersedes the older claims of
       its tier whatever their source; other sources that asserted them are flagged stale
       (``explicit_change``).
    4. Weighted evidence: support for a value is the sum of its claims' weights; the best
       supported wins, ties broken by the strongest single claim, then the newest, then the
       value itself, never by arrival. Conflict strength is the strongest dissent's support:
       below ``silent_below`` adopt, up to ``freeze_above`` adopt provisionally and ask,
       above it freeze for review (in turn and session tiers ask instead: the user is there).
       Multi-valued keys adopt the union of the asserted items; an empty list is an explicit
       "none" that competes with them as one answer against another, with the same bands
       (``weighted_evidence``; ``single_claim`` when every counted claim agrees).
    5. Staleness: long-term claims past the key's horizon are flagged; a winner backed only
       by stale claims is adopted provisionally with a reconfirmation question.
    """
    entrants = [Entrant.of(claim) for claim in claims]
    return Lineup(entrants, policy, spec, user_id=user_id, context=context, default=default,
                  review=review, questions=questions, language=language,
                  labels=labels).resolve(now)  # fmt: skip
