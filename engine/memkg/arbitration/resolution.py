"""The arbitration record: which value holds for a key, decided by which step, against what."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memkg.model.fact import FactStatus, Kind, Scope, Source
from memkg.model.weight import Weight


class Tier(StrEnum):
    """Where a claim stands in scope priority, highest first."""

    TURN = "turn"
    SESSION = "session"
    GLOBAL = "global"
    DEFAULT = "default"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Tier.TURN: 3, Tier.SESSION: 2, Tier.GLOBAL: 1, Tier.DEFAULT: 0}


class Outcome(StrEnum):
    ADOPTED = "adopted"
    PROVISIONAL = "provisional"
    FROZEN = "frozen"
    NO_CLAIMS = "no_claims"
    DEFAULT = "default"


class Step(StrEnum):
    """The policy step that decided (``memory_arbiter.resolve`` lists them in order)."""

    REVIEW_RESOLUTION = "review_resolution"
    SCOPE_PRIORITY = "scope_priority"
    EXPLICIT_CHANGE = "explicit_change"
    WEIGHTED_EVIDENCE = "weighted_evidence"
    SINGLE_CLAIM = "single_claim"
    ROLE_DEFAULT = "role_default"
    NO_EVIDENCE = "no_evidence"


class Standing(StrEnum):
    WON = "won"
    """Supports the resolved value."""
    LOST = "lost"
    CONTESTED = "contested"
    """Part of a conflict that froze the key."""
    PENDING = "pending"
    """A ``fact`` awaiting the user's confirmation: listed, not counted."""


class ClaimScore(BaseModel):
    """One competing claim, its score, and why it won or lost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str
    value: Any
    source: Source
    kind: Kind
    scope: Scope
    tier: Tier
    session_id: str | None = None
    context: dict[str, str] = Field(default_factory=dict)
    confidence: float
    observed_at: datetime
    status: FactStatus
    change: bool = False
    score: float
    weight: Weight
    standing: Standing
    reason: str
    beaten_by: str | None = None
    """The fact (or ``review:<id>``) that beat it, when it lost."""


class ValueSupport(BaseModel):
    """The summed score of the claims asserting one value (one item, for multi-valued keys)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: Any
    support: float
    claims: tuple[str, ...]


class StaleFlag(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str
    source: Source
    value: Any
    why: Literal["superseded_by_change", "past_horizon"]
    detail: str


class Question(BaseModel):
    """What the agent can ask the user to settle the key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    language: str
    purpose: Literal["conflict", "stale", "confirm"]


class Resolution(BaseModel):
    """Which value holds for ``(user, domain, key, context)`` and the full record of why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    domain: str
    key: str
    context: dict[str, str] = Field(default_factory=dict)
    value: Any = None
    """None when frozen or when nothing is known."""
    outcome: Outcome
    step: Step
    reason: str
    strength: float = 0.0
    """Support of the strongest dissenting value."""
    multi: bool = False
    support: tuple[ValueSupport, ...] = ()
    claims: tuple[ClaimScore, ...] = ()
    stale: tuple[StaleFlag, ...] = ()
    question: Question | None = None
    review_id: str | None = None
    decided_at: datetime

    @property
    def usable(self) -> bool:
        """Decisions may build on it: a value holds and the key is not frozen."""
        return self.outcome in (Outcome.ADOPTED, Outcome.PROVISIONAL, Outcome.DEFAULT)
