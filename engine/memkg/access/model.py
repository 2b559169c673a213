"""Access values: keys, grants and audit records (frozen; stores hold them as rows)."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memkg.validate.limits import unstorable

ALL_DOMAINS = "*"


class ApiScope(StrEnum):
    """What a key may do. ``admin`` implies every other scope."""

    READ = "read"
    """Facts, history, claims, profiles, decisions and their explanations, graph, reviews."""
    WRITE = "write"
    """Observations, notes, signals, confirmations and retractions."""
    DECIDE = "decide"
    """Make (and replay) decisions."""
    REVIEW = "review"
    """Resolve keys frozen for human review."""
    ERASE = "erase"
    """Erase a subject (every domain) or everything recorded under an audit id."""
    ADMIN = "admin"
    """Keys, grants, the access audit, metrics, schema checks, migration dry runs, rule checks."""


def utc(moment: datetime) -> datetime:
    """``moment``, read as UTC when it names no time zone (as ``--expires`` reads it).

    A naive time cannot be compared with the clock's aware ones: one stored naive (by an
    older version, or sent without an offset) would fail every check of its key.
    """
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


Moment = Annotated[datetime, AfterValidator(utc)]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ApiKey(_Value):
    """A stored key: everything but its secret, of which only a hash is kept."""

    key_id: str
    name: str
    scopes: tuple[ApiScope, ...]
    domains: tuple[str, ...] = Field(description="memory domains it may touch; '*' is all")
    user_id: str | None = Field(None, description="the one subject it is bound to, if any")
    created_at: Moment
    expires_at: Moment | None = None
    revoked_at: Moment | None = None

    def active(self, now: datetime) -> bool:
        expired = self.expires_at is not None and self.expires_at <= now
        return self.revoked_at is None and not expired


class IssuedKey(_Value):
    """A key as created: the only time its secret ``token`` is shown."""

    key: ApiKey
    token: str


class Grant(_Value):
    """Cross-domain access: ``key_id`` may use ``domain`` with ``scopes``, for a purpose, until."""

    grant_id: str
    key_id: str
    domain: str
    scopes: tuple[ApiScope, ...]
    purpose: str = Field(min_length=1)
    user_id: str | None = None
    granted_by: str
    created_at: Moment
    expires_at: Moment
    revoked_at: Moment | None = None

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and now < self.expires_at


AUDITED_TEXT = 256
"""The longest id, domain or target an audit record keeps (ids are at most 128 characters;
PostgreSQL indexes these columns, and an index entry has a size limit)."""


def kept(text: str | None) -> str | None:
    """``text`` for an audit record, or None when no store can keep it (a NUL, a lone
    surrogate, thousands of characters): the call is recorded all the same, without it."""
    if text is None or len(text) > AUDITED_TEXT or unstorable(text) is not None:
        return None
    return text


class AccessRecord(_Value):
    """One served request about memory: who (key), what, when, for which purpose.

    ``subject`` is the user id, or ``hmac:<hex>`` once that user has been erased.
    """

    record_id: str
    at: datetime
    key_id: str
    action: str
    status: int
    subject: str | None = None
    domain: str | None = None
    target: str | None = None
    purpose: str | None = None
    grant_id: str | None = None
    position: int | None = None
    """Its place in the audit, the newest highest (read back, never stored): send it as
    ``before`` for the records older than it."""
