"""The request and answer models of the HTTP API (and the MCP tools): what OpenAPI describes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memkg.access.model import AccessRecord, ApiKey, Grant, IssuedKey
from memkg.engine import IngestResult
from memkg.lifecycle.notes import Note
from memkg.lifecycle.recall import MAX_QUERY
from memkg.model.fact import DOMAIN_PATTERN, Fact, Observation, Provenance
from memkg.model.identity import Merge
from memkg.service.settings import MAX_BATCH

DOMAIN = DOMAIN_PATTERN
Domain = Annotated[str, Field(pattern=DOMAIN, description="a memory domain, e.g. travel")]
KEY_DOMAIN = rf"^(\*|{DOMAIN[1:-1]})$"
KeyDomain = Annotated[str, Field(pattern=KEY_DOMAIN, description="a memory domain, or * for all")]
CONTEXT_ITEM = r"^[a-z][a-z0-9_]{0,31}=[^=]{0,64}$"
SeqNumber = Annotated[int, Field(ge=0, le=2**63 - 1)]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class _In(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorBody(_Out):
    """Every refusal: a stable code, a message that says how to fix it (and, for refused
    observations, each problem)."""

    model_config = ConfigDict(frozen=True, extra="allow")
    error: str
    message: str


class Health(_Out):
    status: Literal["ok"]
    version: str


class Readiness(_Out):
    status: Literal["ready", "not_ready"]
    checks: dict[str, str]


class Accepted(IngestResult):
    result: Literal["accepted"]


class BatchOut(_Out):
    results: list[dict[str, Any]]


Observations = Observation | Annotated[list[Observation], Field(max_length=MAX_BATCH)]
"""One observation, or a list of up to ``ServiceSettings.max_batch`` (by default 1,000)."""


class NotesOut(_Out):
    user_id: str
    notes: list[Note]
    """The user's live free-text notes (``save_memory_note``, consolidation), by domain."""
    next: str | None = None
    """More notes follow: send this cursor as ``after`` for the next page."""


class FactsOut(_Out):
    user_id: str
    as_of: int | None = None
    version: int | None = None
    """The user's stream version these facts include (read before them): send it as
    ``expected_version`` to make a write conditional on nothing having changed since."""
    facts: list[Fact]
    next: str | None = None
    """More facts follow: send this cursor as ``after`` for the next page."""


class HistoryOut(_Out):
    user_id: str
    key: str
    history: list[Fact]
    next: str | None = None
    """More versions follow: send this cursor as ``after`` for the next page."""


class EventOut(_Out):
    status: str
    fact_id: str
    event_id: str
    version: int | None = None
    """The user's stream version this write left."""


class DecisionOut(_Out):
    decision_id: str
    user_id: str
    domain: str
    decision: str | None
    status: str
    action: str | None
    urgency: str | None
    parameters: dict[str, Any]
    reason_codes: list[str]
    message: str
    problems: list[str]
    decided_at: str
    as_of_seq: int
    memory_off: bool = Field(False, description="the user had turned memory off: no memory "
                             "was read, only role defaults")  # fmt: skip
    merged_ids: list[str] = Field(default_factory=list, description="other ids of the same "
                                  "person whose memory was read")  # fmt: skip
    trace_id: str | None = None


class DecisionsOut(_Out):
    user_id: str
    decisions: list[DecisionOut]


class ReplayOut(_Out):
    decision_id: str
    reproduced: bool
    differences: list[str]
    revisions_changed: list[str]


class SignalOut(_Out):
    model_config = ConfigDict(frozen=True, extra="allow")
    status: Literal["recorded"]
    event_id: str
    seq: int


class PathsOut(_Out):
    user_id: str
    concept: str
    paths: list[dict[str, Any]]


class DomainsOut(_Out):
    domains: list[str]


class KeysOut(_Out):
    domain: str
    keys: list[dict[str, Any]]


class ConfirmBody(_In):
    by: str = Field("user", min_length=1, max_length=128)


class RetractBody(_In):
    reason: str = Field(min_length=1, max_length=500)


class MemoryOffBody(_In):
    mode: Literal["keep", "erase"] = Field(
        "keep", description="keep: memory is frozen as it is; erase: it is erased (needs the "
        "erase scope)",
    )  # fmt: skip
    by: str = Field("user", min_length=1, max_length=128)
    reason: str = Field("", max_length=500)


class MergeBody(_In):
    other: str = Field(min_length=1, max_length=128, description="the id to merge into this one")
    by: str = Field(min_length=1, max_length=128, description="who asked or confirmed")
    reason: str = Field(min_length=1, max_length=500, description="why they are one person")
    confirm: str | None = Field(None, max_length=128, description="the proposal's merge_id: "
                                "merge now (without it, a proposal is recorded)")  # fmt: skip


class SplitBody(_In):
    by: str = Field(min_length=1, max_length=128)
    reason: str = Field(min_length=1, max_length=500)


class MergesOut(_Out):
    user_id: str
    merges: list[Merge]


class MemoryOnBody(_In):
    by: str = Field("user", min_length=1, max_length=128)
    reason: str = Field("", max_length=500)


class DecideBody(_In):
    domain: Domain
    decision: str | None = Field(None, max_length=128)
    context: dict[str, Any] = Field(default_factory=dict)
    session_id: str | None = Field(None, max_length=128)
    turn: str | None = Field(None, max_length=256)


class NoteBody(_In):
    domain: Domain
    note: str = Field(max_length=8192)
    scope: Literal["turn", "session", "global"] = "session"
    key: str | None = Field(None, max_length=256)
    value: Any = None
    session_id: str | None = Field(None, max_length=128)
    source_ref: str | None = Field(None, max_length=256)
    provenance: Provenance | None = None


class RecallBody(_In):
    """In the body, not the URL: a query is what a user said, and URLs end up in logs."""

    query: str = Field(min_length=1, max_length=MAX_QUERY, description="what the agent looks for")
    domain: Domain
    k: int = Field(5, ge=0, le=100, strict=True, description="how many memories to inject (5)")
    session_id: str | None = Field(None, min_length=1, max_length=128)


class SignalBody(_In):
    key: str = Field(max_length=256)
    value: Any
    kind: str = Field(max_length=32)
    domain: Domain | None = None
    session_id: str | None = Field(None, max_length=128)


class ResolveReviewBody(_In):
    value: Any
    note: str = Field(min_length=1, max_length=500)
    reviewer: str | None = Field(None, min_length=1, max_length=128)


class ReviewsOut(_Out):
    reviews: list[dict[str, Any]]
    next: str | None = None
    """More reviews follow: send this cursor as ``after`` for the next page."""


class KeyCreateBody(_In):
    name: str = Field(min_length=1, max_length=128)
    scopes: list[str] = Field(min_length=1, max_length=16)
    domains: list[KeyDomain] = Field(min_length=1, max_length=64)
    user_id: str | None = Field(None, max_length=128)
    expires_at: datetime | None = None


class GrantBody(_In):
    key_id: str = Field(max_length=64)
    domain: Domain
    purpose: str = Field(min_length=1, max_length=200)
    expires_at: datetime
    scopes: list[str] = Field(default_factory=lambda: ["read"], min_length=1)
    user_id: str | None = Field(None, max_length=128)


class KeyList(_Out):
    keys: list[ApiKey]


class GrantList(_Out):
    grants: list[Grant]


class AuditOut(_Out):
    records: list[AccessRecord]
    next: int | None = None
    """Older records follow: send this position as ``before`` for them."""


class ErasureOut(_Out):
    model_config = ConfigDict(frozen=True, extra="allow")
    erasure_id: str
    user_id: str
    scope: str
    digest: str
    removed: dict[str, int]
    files: list[str]
    """File names (never server paths) the erasure scrubbed."""


class ErasuresOut(_Out):
    receipts: list[ErasureOut]


__all__ = ["IssuedKey"]
