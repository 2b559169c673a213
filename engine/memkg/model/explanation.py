"""The explanation tree: a decision, the rules behind it, their conditions and the evidence.

::

    Explanation
    ├── selected: RuleNode ── conditions: ConditionNode ── facts: FactNode
    │                                                   ├── edges / paths: Edge, GraphPath
    │                                                   └── context: ContextValue
    ├── suppressed: SuppressedNode (the rule, what beat it, why)
    ├── why_not: WhyNotNode (a rule that nearly fired, its first failing condition)
    └── left_out: facts and edges that could not take part, and why

Explanations are data; ``memkg.explain`` renders them as text, Markdown or JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memkg.model.evidence import Edge, GraphPath
from memkg.model.fact import Provenance


class FactNode(BaseModel):
    """A fact as the decision saw it: value, where it came from, when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str
    key: str
    value: Any
    item: Any = None
    """For a list value: the item that satisfied the condition."""
    kind: str
    source: str
    confidence: float
    status: str
    provenance: Provenance
    observed_at: datetime
    recorded_at: datetime
    valid_until: datetime | None = None
    schema_version: int


class ContextValue(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str
    value: Any


class ConditionNode(BaseModel):
    """One condition of a rule: what it asks, whether it held, and what satisfied it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    kind: str
    """The condition kind's name (``memkg.rules.kinds``): fact, edge, path, context, ..."""
    negated: bool = False
    text: str
    """The condition in words, e.g. ``child.age < 6``."""
    line: int
    holds: bool
    bindings: dict[str, Any] = Field(default_factory=dict)
    facts: tuple[FactNode, ...] = ()
    edges: tuple[Edge, ...] = ()
    paths: tuple[GraphPath, ...] = ()
    context: tuple[ContextValue, ...] = ()
    failure: str | None = None
    """Why it did not hold, in words."""


class RuleNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_id: str
    version: int
    description: str
    file: str
    line: int
    reason_code: str
    message: str
    action: str
    urgency: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    conditions: tuple[ConditionNode, ...] = ()
    alternatives: int = 0


class SuppressedNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: RuleNode
    beaten_by: tuple[str, ...]
    reason: str


class WhyNotNode(BaseModel):
    """A rule that did not fire although all but (about) one of its conditions held."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_id: str
    description: str
    file: str
    line: int
    action: str
    holding: int
    total: int
    failing: ConditionNode


class LeftOutNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    ref: str
    key: str
    value: Any = None
    reason: str
    detail: str = ""


class MemoryClaimNode(BaseModel):
    """One competing claim as arbitration scored it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fact_id: str
    value: Any = None
    source: str
    scope: str
    score: float
    standing: str
    """``won``, ``contested``, ``lost`` or ``pending``."""
    reason: str


class MemoryNode(BaseModel):
    """Which memory held for one key the decision read, and the policy step that decided."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    context: dict[str, str] = Field(default_factory=dict)
    value: Any = None
    outcome: str
    """``adopted``, ``provisional``, ``frozen``, ``default``..."""
    step: str
    reason: str
    strength: float = 0.0
    claims: tuple[MemoryClaimNode, ...] = ()
    stale: tuple[str, ...] = ()
    question: str | None = None


class Explanation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    user_id: str
    domain: str
    decision: str
    status: str
    action: str | None = None
    urgency: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    summary: str
    policy: str
    decided_at: datetime
    local_time: str | None = None
    timezone: str | None = None
    context: tuple[ContextValue, ...] = ()
    selected: tuple[RuleNode, ...] = ()
    default: str | None = None
    """The table's default outcome, when no rule matched and it applied."""
    suppressed: tuple[SuppressedNode, ...] = ()
    why_not: tuple[WhyNotNode, ...] = ()
    left_out: tuple[LeftOutNode, ...] = ()
    memory: tuple[MemoryNode, ...] = ()
    """How arbitration resolved each key the rules read (claims, scores, the deciding step)."""
    problems: tuple[str, ...] = ()
    memory_off: bool = False
    """The user had turned memory off: no memory was read, only role defaults."""
    merged_ids: tuple[str, ...] = ()
    """Other ids of the same person whose memory was read with this one."""
    status_action: str | None = None
    """The safe action the domain declares for a status other than ``decided`` (the action
    carried), or None: such a decision then carries no action."""
    as_of_seq: int
    rule_bundle: str
