"""The fact (memory item) and the observation an agent hands in.

An ``Observation`` is what arrives; a ``Fact`` is what memory holds after validation,
with engine-assigned id, times and status.
"""

from __future__ import annotations

import numbers
import re
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from memkg.model.source import Source as Source  # the fact's field type, re-exported

_IDENT = r"^[A-Za-z0-9][A-Za-z0-9_.:@\-]{0,127}$"
_KEY = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){0,7}$"
DOMAIN_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
"""A memory domain's name: an observation's ``domain``, a folder under a root's ``schemas/``
and ``rules/``, what ``memkg init`` takes."""
_CONTEXT_KEY = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
PATTERN_TEXT = {
    _IDENT: "an id: 1 to 128 ASCII letters, digits and _ . : @ -, starting with a letter or a "
    "digit (e.g. li-na, tel:8613800000000)",
    _KEY: "a key: lowercase dotted names of letters, digits and _, each starting with a letter "
    "(e.g. seat.preference)",
    DOMAIN_PATTERN: "a domain: 1 to 32 lowercase letters, digits and _, starting with a letter "
    "(e.g. travel)",
}
"""What each pattern of the envelope takes, in words (for a message that says how to fix)."""


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamp needs a timezone, e.g. 2026-05-01T09:00:00Z")
    return value


_NUMERIC = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$")


def _stamp(value: Any) -> Any:
    """Only an ISO 8601 text (or a ``datetime``) is a timestamp: a bare number, or a text of
    one, would be read as seconds or milliseconds since 1970 by a guess, in no stated zone."""
    if isinstance(value, bool | int | float) or (isinstance(value, str) and _NUMERIC.match(value)):
        raise PydanticCustomError(
            "datetime_type",
            "Input should be an ISO 8601 timestamp with a timezone, e.g. "
            "2026-05-01T09:00:00Z, not a number (seconds since 1970 are not taken)",
        )
    return value


def _json_type(value: Any) -> str:
    """What ``value`` is, in JSON's words: "a string", "a boolean", "null"."""
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), (int | float, "a number"), (str, "a string"),
                       (list | tuple, "an array"), (dict, "an object")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return f"a {type(value).__name__}"


def _flag(value: Any) -> Any:
    """A flag is a JSON boolean: "yes", "1" or 1 is not consent, nor a change."""
    if type(value) is not bool:
        raise PydanticCustomError(
            "bool_type",
            "Input should be true or false (a JSON boolean), not {given}",
            {"given": _json_type(value)},
        )
    return value


def _number(value: Any) -> Any:
    """A confidence is a number (a ``Decimal`` from a database too), neither a flag (true is
    not 1.0) nor a text of one."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
        raise PydanticCustomError(
            "float_type",
            "Input should be a number from 0 to 1 (a JSON number), not {given}",
            {"given": _json_type(value)},
        )
    return value if isinstance(value, int | float) else float(value)


def unsigned_zeros(value: Any) -> Any:
    """``value`` with every ``-0.0`` in it written ``0.0``, which equals it in every comparison
    a rule makes: PostgreSQL's ``jsonb`` keeps no negative zero, so a value or a decision
    context holding one would read back, and replay, otherwise than it was made.

    >>> unsigned_zeros({"max": -0.0, "legs": [-0.0, 1.5], "text": "-0.0"})
    {'max': 0.0, 'legs': [0.0, 1.5], 'text': '-0.0'}
    """
    if type(value) is float:
        return 0.0 if value == 0 else value
    return _without_negative_zero(value) if _negative_zero_in(value) else value


_ZERO_DEPTH = 64
"""Deeper than this a value is refused by the limits anyway (``limit.depth``): left alone."""


def _negative_zero_in(value: Any) -> bool:
    """Whether a ``-0.0`` lies within ``_ZERO_DEPTH`` levels of ``value`` (walked without
    recursion, so that no nesting exhausts the stack)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if type(item) is float and item == 0 and str(item)[0] == "-":
            return True
        if depth < _ZERO_DEPTH and isinstance(item, dict | list | tuple):
            items = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in items)
    return False


def _without_negative_zero(value: Any, depth: int = 0) -> Any:
    if type(value) is float:
        return 0.0 if value == 0 else value
    if depth >= _ZERO_DEPTH:
        return value
    if isinstance(value, dict):
        return {k: _without_negative_zero(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_negative_zero(v, depth + 1) for v in value]
    return value


AwareDatetime = Annotated[datetime, BeforeValidator(_stamp), AfterValidator(_aware)]
Identifier = Annotated[str, Field(pattern=_IDENT)]
Flag = Annotated[bool, BeforeValidator(_flag)]


class Kind(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    STATE = "state"
    PATTERN = "pattern"


class SupersedeReason(StrEnum):
    """Why a claim was superseded: the ``reason`` of a ``fact.superseded`` payload.

    Stored as these values; events written before they existed carry English prose, which
    ``read_supersede_reason`` still understands.
    """

    EXPLICIT_CHANGE = "explicit_change"
    """A newer claim states a change in the world (``change: true``)."""
    CORRECTION = "correction"
    """A newer claim names this one in ``supersedes``."""
    RESTATED = "restated"
    """The same source said it again."""
    TURN_INSTRUCTION = "turn_instruction"
    """A newer turn instruction updated the session notes."""
    OUTDATED = "outdated"
    """Observed before a claim that already holds the slot."""
    MIGRATION = "migration"
    """A schema migration replaced it."""

    @property
    def text(self) -> str:
        """The reason in words, as explanations show it."""
        return _SUPERSEDE_TEXT[self]


_SUPERSEDE_TEXT = {
    SupersedeReason.EXPLICIT_CHANGE: "explicit change",
    SupersedeReason.CORRECTION: "correction",
    SupersedeReason.RESTATED: "restated by the same source",
    SupersedeReason.TURN_INSTRUCTION: "newer turn instruction",
    SupersedeReason.OUTDATED: "observed before a claim that already holds this slot",
    SupersedeReason.MIGRATION: "schema migration",
}


def read_supersede_reason(payload: dict[str, Any]) -> tuple[SupersedeReason | None, str | None]:
    """The reason of a ``fact.superseded`` payload and the words to show for it.

    Current events store a ``SupersedeReason`` value (and maybe a ``detail``); older ones stored
    prose ("explicit change", "restated by the same source", "newer turn instruction",
    "observed before <id>, which already holds this slot", or a migration's source).

    >>> read_supersede_reason({"reason": "explicit_change"})
    (<SupersedeReason.EXPLICIT_CHANGE: 'explicit_change'>, 'explicit change')
    >>> read_supersede_reason({"reason": "explicit change"})
    (<SupersedeReason.EXPLICIT_CHANGE: 'explicit_change'>, 'explicit change')
    """
    raw, detail = payload.get("reason"), payload.get("detail")
    if not isinstance(raw, str) or not raw:
        return None, detail
    reason = _REASONS.get(raw)
    if reason is None:
        legacy = _LEGACY_REASONS.get(raw)
        if legacy is not None:
            return legacy, raw
        if raw.startswith("observed before "):
            return SupersedeReason.OUTDATED, raw
        return None, raw  # prose no protocol value stood for: shown, never compared
    return reason, detail or reason.text


_REASONS = {r.value: r for r in SupersedeReason}
_LEGACY_REASONS = {text: r for r, text in _SUPERSEDE_TEXT.items()}


class Scope(StrEnum):
    TURN = "turn"
    SESSION = "session"
    GLOBAL = "global"


class Sensitivity(StrEnum):
    PUBLIC = "public"
    RESTRICTED = "restricted"
    SPECIAL = "special"
    PROHIBITED = "prohibited"


class FactStatus(StrEnum):
    ACTIVE = "active"
    PENDING_CONFIRMATION = "pending_confirmation"
    SUPERSEDED = "superseded"
    FROZEN = "frozen"
    EXPIRED = "expired"
    RETRACTED = "retracted"


LIVE_STATUSES = frozenset({FactStatus.ACTIVE, FactStatus.PENDING_CONFIRMATION, FactStatus.FROZEN})
"""Statuses of facts that still hold (confirmed or not, frozen or not): the one definition."""
REPLACING = frozenset({SupersedeReason.EXPLICIT_CHANGE, SupersedeReason.CORRECTION})
"""Why a superseded claim may still be listed by a read: its successor replaced it (a change
in the world, a correction), which a read shows while the successor holds."""


def superseded_plainly(fact: Fact) -> bool:
    """Superseded (which is for good), of global scope and without context: a claim that a
    read lists only as what a change or a correction that holds replaced
    (``arbitration.claims.silent``)."""
    return fact.status is FactStatus.SUPERSEDED and fact.scope is Scope.GLOBAL and not fact.context


def spent(fact: Fact) -> bool:
    """Whether no read of the fact's key can tell ``fact`` from a fact never stored, now or
    ever: superseded plainly, other than by a change or a correction.
    ``arbitration.claims.silent`` holds for it whatever holds; reads of a key skip such facts
    (``events.projection.UserMemory.bearing``)."""
    return superseded_plainly(fact) and fact.supersede_reason not in REPLACING


class Provenance(BaseModel):
    """Where a fact came from and under which consent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source_ref: Annotated[str, Field(max_length=256)] | None = None
    consent_granted: Flag = False
    consent_version: Annotated[str, Field(max_length=64)] | None = None
    audit_log_id: Annotated[str, Field(max_length=128)] | None = None
    purpose: Annotated[str, Field(max_length=256)] | None = None


class Observation(BaseModel):
    """One thing an agent observed about a user, before validation.

    ``kind`` and ``sensitivity`` default to what the key's schema declares. ``change``
    marks an explicit change in the world ("I moved to Shanghai"); ``supersedes`` names
    the fact a correction replaces.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: Identifier
    domain: Annotated[str, Field(pattern=DOMAIN_PATTERN)]
    key: Annotated[str, Field(pattern=_KEY)]
    value: Any
    kind: Kind | None = None
    source: Source
    confidence: Annotated[
        float, BeforeValidator(_number), Field(ge=0.0, le=1.0, allow_inf_nan=False)
    ] = 1.0
    scope: Scope = Scope.GLOBAL
    session_id: Identifier | None = None
    observed_at: AwareDatetime | None = None
    valid_until: AwareDatetime | None = None
    sensitivity: Sensitivity | None = None
    provenance: Provenance = Provenance()
    context: dict[str, Annotated[str, Field(max_length=64)]] = Field(
        default_factory=dict, max_length=8
    )
    change: Flag = False
    supersedes: Identifier | None = None
    idempotency_key: Annotated[str, Field(min_length=1, max_length=128)] | None = None

    @field_validator("value")
    @classmethod
    def _unsigned(cls, value: Any) -> Any:
        """-0.0 is stored as 0.0 (``unsigned_zeros``); scalars, most values, pass at once."""
        if isinstance(value, dict | list | tuple) or type(value) is float:
            return unsigned_zeros(value)
        return value

    @field_validator("context", mode="before")
    @classmethod
    def _context_keys(cls, value: Any) -> Any:
        # before the dict is parsed, so no key (maybe personal data, maybe huge) reaches a message
        if isinstance(value, dict):
            for position, name in enumerate(value, start=1):
                if not (isinstance(name, str) and _CONTEXT_KEY.fullmatch(name)):
                    raise ValueError(
                        f"context key {position} of {len(value)} is not a name: context keys "
                        f"match {_CONTEXT_KEY.pattern} (e.g. trip_type); put data in the values"
                    )
        return value


class Fact(BaseModel):
    """A memory item: an observation that passed validation, as memory holds it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    user_id: str
    domain: str
    key: str
    value: Any
    kind: Kind
    source: Source
    confidence: float
    scope: Scope
    session_id: str | None = None
    observed_at: datetime
    recorded_at: datetime
    valid_until: datetime | None = None
    provenance: Provenance
    sensitivity: Sensitivity
    status: FactStatus
    schema_version: int
    context: dict[str, str] = Field(default_factory=dict)
    change: bool = False
    supersedes: str | None = None
    superseded_by: str | None = None
    supersede_reason: SupersedeReason | None = None
    """Why it was superseded (status ``superseded``); ``status_reason`` says it in words."""
    status_reason: str | None = None
    seq: int = 0

    def with_status(self, status: FactStatus, **changes: Any) -> Fact:
        """A copy with a new status (facts are never edited in place)."""
        return self.model_copy(update={"status": status, **changes})
