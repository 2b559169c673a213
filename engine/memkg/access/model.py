"""Access values: keys, grants and audit records (frozen; stores hold them as rows)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

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


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ApiKey(_Value):
    """A stored key: everything but its secret, of which only a hash is kept."""

    key_id: str
    name: str
    scopes: tuple[ApiScope, ...]
    domains: tuple[str, ...] = Field(description="memory domains it may touch; '*' is all")
    user_id: str | None = Field(None, description="the one subject it is bound to, if any")
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None

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
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None = None

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and now < self.expires_at


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
