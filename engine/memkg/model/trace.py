"""What was injected, per request: the trace of one ``render_profile``, ``recall`` or ``decide``.

A trace lists the memories the request considered (by id: a fact, a note, a key, an edge),
each with its score, whether it went into the prompt or the decision, and why not when it
was dropped. It holds no memory values and no free text: the prompt is kept as its SHA-256,
enough to tell which text was injected without keeping a second copy of it, and a recall's
query likewise as its SHA-256 and length (a query may carry what the user never asked memkg
to keep). A decision's context is kept in the bounded form the decision log keeps it in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Operation = Literal["render_profile", "recall", "decide"]
MAX_ITEMS = 200
"""The most items a trace lists; the rest are counted in ``unlisted``."""
MAX_REASON_CHARS = 240


class TraceItem(BaseModel):
    """One memory a request considered."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ref: str
    """``fact:<id>``, ``note:<id>``, ``key:<key>[...]``, ``edge:<ref>``, ``path:<ref>``."""
    kind: str
    """The fact kind, ``note``, or the profile section or decision role it stood in."""
    key: str | None = None
    score: float | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    used: bool
    """It went into the prompt, the recall answer, or the decision."""
    reason: str | None = None
    """Why it was dropped (or, for a decision, why it did not count)."""


class Trace(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    trace_id: str
    operation: Operation
    user_id: str
    domain: str | None = None
    created_at: datetime
    request: dict[str, Any] = Field(default_factory=dict)
    """What the caller asked: a query as ``query_sha256`` and ``query_chars`` only, a
    decision's context as the decision log keeps it."""
    items: tuple[TraceItem, ...] = ()
    unlisted: int = 0
    """Items beyond ``MAX_ITEMS`` (counted in ``counts``, not listed)."""
    counts: dict[str, int] = Field(default_factory=dict)
    """``considered``, ``used``, ``dropped``."""
    output: dict[str, Any] = Field(default_factory=dict)
    """What came out: the prompt's tokens and SHA-256, the recalled refs, the decision."""
