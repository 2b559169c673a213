"""A decision and everything it records (DESIGN section 6), as frozen values.

Rules produce ``Candidate``\\ s, the hit-policy arbiter turns them into an ``Arbitration``, and
the engine records both with the request, the log position, the revisions and the explanation
in one ``Decision``: enough to explain it later and to replay it exactly.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memkg.model.explanation import Explanation


class DecisionStatus(StrEnum):
    DECIDED = "decided"
    NO_MATCH = "no_match"
    NEEDS_REVIEW = "needs_review"
    HIT_POLICY_VIOLATION = "hit_policy_violation"
    INVALID_INPUT = "invalid_input"


class Urgency(StrEnum):
    """Ordered from least to most urgent."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return list(Urgency).index(self)


class HitPolicy(BaseModel):
    """How a rule table chooses when several rules match.

    ``priority`` lists actions from strongest to weakest; ``collect`` gathers every match
    into ``action`` with an ``aggregate`` (``list``, ``count``, or ``sum``/``min``/``max`` of
    the numeric parameter ``of``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["unique", "first", "priority", "collect"]
    priority: tuple[str, ...] = ()
    aggregate: Literal["list", "count", "sum", "min", "max"] | None = None
    of: str | None = None
    action: str | None = None

    def describe(self) -> str:
        if self.kind == "priority":
            return "priority: " + " > ".join(self.priority)
        if self.kind == "collect":
            what = f"{self.aggregate} of {self.of}" if self.of else str(self.aggregate)
            return f"collect ({what}) into {self.action}"
        return self.kind


class Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    urgency: Urgency | None = None


class Binding(BaseModel):
    """Which piece of evidence satisfied condition ``condition`` (0-based) of a rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    condition: int
    ref: str
    """``fact:<fact id>[#item]``, ``edge:<ref>``, ``path:<ref>`` or ``context``."""


class Candidate(BaseModel):
    """A rule that matched, and what it proposes. Rules propose; the arbiter decides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_id: str
    rule_index: int
    """Position in its file: ``first`` and ties go by it."""
    version: int
    output: Output
    reason_code: str
    message: str
    bindings: tuple[Binding, ...] = ()
    alternatives: int = 0
    """How many other ways the same rule matched (other facts satisfying it)."""


class Suppression(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_id: str
    by: tuple[str, ...]
    reason: str


class Arbitration(BaseModel):
    """What the hit policy did: every matched rule is either selected or suppressed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: HitPolicy
    matched: tuple[str, ...]
    selected: tuple[str, ...]
    suppressed: tuple[Suppression, ...] = ()
    violation: str | None = None


class Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: DecisionStatus
    action: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    urgency: Urgency | None = None
    reason_codes: tuple[str, ...] = ()
    message: str = ""
    default_used: bool = False


RECORDER = 5
"""How a decision is recorded: what its explanation shows and what it cites (``left_out``,
``read``). Raised by every memkg change that records the same decision differently; a replay
of a record an earlier recorder made reports those parts' differences as revisions that
moved (``ReplayReport.revisions_changed``), its outcome still compared exactly. 1 (absent
from the record): before the time zone was arbitrated and object values read in key order;
2: before claims of other sessions were left out of a decision's record (they were listed as
``out_of_scope``); 3: before a review settled on a value a stored claim carries stopped
listing the review's own value as ``out_of_scope``, and a session's strong conflict was
listed as what held the decision back (``frozen``); 4: before a condition that asks only
that a list key is known showed the whole list (its binding, placeholder and evidence showed
the item it matched)."""


class Revisions(BaseModel):
    """The versions of everything besides memory that a decision depended on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_bundle: str
    schema_versions: dict[str, int]
    ontology: str
    recorder: int | None = None
    """``RECORDER`` of the memkg that made the record (None: 1, before it was recorded)."""


class LeftOut(BaseModel):
    """A fact or edge that did not take part in the decision, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["fact", "edge"]
    ref: str
    key: str
    value: Any = None
    reason: str
    """``pending_confirmation``, ``frozen``, ``expired``, ``retracted``, ``superseded``,
    ``below_threshold``."""
    detail: str = ""


class DecisionRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    domain: str
    decision: str
    """The rule table asked (a file ``rules/<domain>/<decision>.yaml``)."""
    context: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = None
    """The session the decision was made in: its session notes count."""
    turn: str | None = None
    """The turn (its ``source_ref``) the decision was made in: its instructions count."""


class Decision(BaseModel):
    """The full record of one decision: what was asked, on what state, what came out, why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    request: DecisionRequest
    as_of_seq: int
    decided_at: datetime
    """The recorded clock: replay runs with a clock frozen here."""
    revisions: Revisions
    candidates: tuple[Candidate, ...] = ()
    arbitration: Arbitration | None = None
    result: Result
    explanation: Explanation
    left_out: tuple[LeftOut, ...] = ()
    problems: tuple[str, ...] = ()
    """Why the input was invalid or the decision needs review."""
    memory_off: bool = False
    """The user had turned memory off: the decision read no memory, only role defaults."""
    merged_ids: tuple[str, ...] = ()
    """Other ids of the same person whose memory the decision read (merged into one)."""
    read: tuple[str, ...] | None = None
    """The ids of the facts the rules were given, of the claims others were left out for
    (``rules.snapshot.DecisionInput.read``), and of the fact the local time's timezone came
    from: a fact can shape a decision without being bound (a rule that nearly fired on
    it, a negation it failed), and a purge of it takes every decision that read it. None in
    a record made before the facts read were kept (a replay does not compare it then)."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Milliseconds per stage; the one part of the record replay does not reproduce."""
    trace_id: str | None = None
    """The trace of the request that made it (``Engine.trace``); a replay makes none."""

    @property
    def status(self) -> DecisionStatus:
        return self.result.status
