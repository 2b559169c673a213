"""The access operations: issue, check and revoke keys, grant domains, record and query access.

>>> from memkg.clock import FrozenClock
>>> from datetime import UTC, datetime
>>> ring = Keyring(MemoryAccessStore(), FrozenClock(datetime(2026, 1, 1, tzinfo=UTC)))
>>> issued = ring.create("triage bot", ["read", "decide"], ["health"])
>>> issued.token.startswith("mk_")
True
>>> ring.authenticate(issued.token).key.domains
('health',)
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime

from pydantic import TypeAdapter, ValidationError

from memkg.access import secret
from memkg.access.model import (
    ALL_DOMAINS,
    AccessRecord,
    ApiKey,
    ApiScope,
    Grant,
    IssuedKey,
    utc,
)
from memkg.access.policy import Principal
from memkg.access.store import AUDIT_LIMIT, AccessStore, MemoryAccessStore
from memkg.clock import Clock
from memkg.errors import InvalidOperation, MemkgError, NotFound, StoreError, Unauthenticated
from memkg.model.fact import Identifier
from memkg.model.names import NAME_RULE, is_name

USER_ID_RULE = "1 to 128 ASCII letters, digits and _ . : @ -, starting with a letter or digit"
_USER_ID: TypeAdapter[str] = TypeAdapter(Identifier)


def is_user_id(value: object) -> bool:
    """Whether writes accept ``value`` as a user id (``USER_ID_RULE``)."""
    try:
        _USER_ID.validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


def check_user_id(user_id: str, code: str, hint: str) -> str:
    """``user_id`` if writes accept it as a user id; otherwise ``code``, saying what one is and
    ``hint`` (what to give instead): anything bound to another id would reach no one."""
    try:
        return _USER_ID.validate_python(user_id)
    except ValidationError:
        shown = user_id if len(user_id) <= 40 else user_id[:40] + "..."
        raise InvalidOperation(f"{shown!r} is not a user id: {USER_ID_RULE}; {hint}",
                               code=code) from None  # fmt: skip


def _bound_user(user_id: str | None) -> str | None:
    """``user_id`` if writes accept it as a user id: a key or grant bound to any other would
    reach no one (every write for it is refused, every read finds nothing)."""
    if user_id is None:
        return None
    return check_user_id(user_id, "access.user_invalid", "bind the key to the id your writes use")


def _future(expires_at: datetime | None, now: datetime, what: str) -> datetime | None:
    """``expires_at`` (UTC when it names no zone), refused when it is not after ``now``."""
    if expires_at is None:
        return None
    expires_at = utc(expires_at)
    if expires_at <= now:
        raise MemkgError(f"the {what} would expire at {expires_at.isoformat()}, which is past: "
                         "give a later time", code="access.expiry_past")  # fmt: skip
    return expires_at


def scopes_of(names: Iterable[str]) -> tuple[ApiScope, ...]:
    """ApiScope names as ``ApiScope`` values, each once, in declaration order."""
    given = set()
    for name in names:
        try:
            given.add(ApiScope(name))
        except ValueError:
            allowed = ", ".join(s.value for s in ApiScope)
            raise MemkgError(f"unknown scope {name!r}: use {allowed}",
                             code="access.scope_unknown") from None  # fmt: skip
    if not given:
        raise MemkgError("give at least one scope", code="access.scope_unknown")
    return tuple(s for s in ApiScope if s in given)


def _hidden(text: str) -> str | None:
    """The first character of ``text`` that is a control, format (invisible) or line
    separator character, named with its place; None when a reader sees every one (spaces of
    any width are seen)."""
    for at, char in enumerate(text):
        if unicodedata.category(char) in _UNSEEN:
            name = unicodedata.name(char, "a control character").lower()
            return f"{name} (U+{ord(char):04X}) at character {at}"
    return None


_UNSEEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
PURPOSE_MAX = 200
"""The longest purpose a grant may give: the audit records of its uses keep it whole."""
_WHOLE_SCOPES = frozenset({ApiScope.ADMIN, ApiScope.ERASE})
"""Scopes no grant can carry: they act on more than the one domain a grant opens."""


class Keyring:
    """Keys, grants and the audit over one ``AccessStore``; time and ids from ``clock``."""

    def __init__(self, store: AccessStore, clock: Clock) -> None:
        self.store, self.clock = store, clock

    def create(
        self,
        name: str,
        scopes: Iterable[str],
        domains: Iterable[str],
        *,
        user_id: str | None = None,
        expires_at: datetime | None = None,
    ) -> IssuedKey:
        """A new key; its token is in the result and nowhere else."""
        domains = tuple(sorted(set(domains)))
        if not domains:
            raise MemkgError("give the domains the key may use (or '*' for every domain)",
                             code="access.domains_missing")  # fmt: skip
        if not is_name(name):
            raise MemkgError(
                f"a key needs a name of {NAME_RULE}: it names the key in the audit, and the "
                "reviewer of the reviews it settles", code="access.name_invalid",
            )  # fmt: skip
        scopes = scopes_of(scopes)
        user_id = _bound_user(user_id)
        expires_at = _future(expires_at, self.clock.now(), "key")
        whole = (ALL_DOMAINS,) if ALL_DOMAINS in domains else domains
        if ApiScope.ADMIN in scopes and (whole != (ALL_DOMAINS,) or user_id is not None):
            raise MemkgError(
                "an admin key manages keys, grants and the audit of the whole store, so it "
                "cannot be limited to domains or a user: give it the domains '*' and no user, "
                "or give a limited key the scopes it needs (read, write, decide, review, erase)",
                code="access.admin_limited",
            )
        key_id, token, digest = secret.mint()
        key = ApiKey(key_id=key_id, name=name, scopes=scopes, domains=whole,
                     user_id=user_id, created_at=self.clock.now(),
                     expires_at=expires_at)  # fmt: skip
        self.store.add_key(key, digest)
        return IssuedKey(key=key, token=token)

    def authenticate(self, token: str | None) -> Principal:
        """The caller behind ``token``, with its active grants; ``Unauthenticated`` otherwise."""
        if not token:
            raise Unauthenticated(
                "send an API key: Authorization: Bearer mk_...", code="auth.required"
            )
        parsed = secret.parse(token)
        found = self.store.key(parsed[0]) if parsed else None
        now = self.clock.now()
        if found is None or not secret.matches(token, found[1]) or not found[0].active(now):
            raise Unauthenticated("the API key is unknown, revoked or expired",
                                  code="auth.invalid")  # fmt: skip
        key = found[0]
        grants = tuple(g for g in self.store.grants(key.key_id) if g.active(now))
        return Principal(key, grants)

    def list_keys(self) -> list[ApiKey]:
        return self.store.keys()

    def revoke(self, key_id: str) -> ApiKey:
        key = self.store.revoke_key(key_id, self.clock.now())
        if key is None:
            raise NotFound(f"no API key {key_id!r}", code="access.key_not_found")
        return key

    def grant(
        self,
        key_id: str,
        domain: str,
        purpose: str,
        expires_at: datetime,
        *,
        scopes: Iterable[str] = ("read",),
        user_id: str | None = None,
        granted_by: str = "admin",
    ) -> Grant:
        """Open ``domain`` to ``key_id`` for ``purpose`` until ``expires_at``."""
        if self.store.key(key_id) is None:
            raise NotFound(f"no API key {key_id!r}", code="access.key_not_found")
        if not purpose.strip():
            raise MemkgError("a grant needs its purpose", code="access.purpose_missing")
        hidden = _hidden(purpose)
        if len(purpose) > PURPOSE_MAX or hidden is not None:
            what = (f"it holds {hidden}" if hidden is not None
                    else f"{len(purpose):,} characters were given")  # fmt: skip
            raise MemkgError(
                f"a grant's purpose is one line of at most {PURPOSE_MAX} characters, none of "
                "them a control or invisible character (a line break, a tab, a NUL, a "
                "zero-width space, a direction mark), as it is written into the audit record "
                f"of every use of the grant and shown as written: {what}",
                code="access.purpose_invalid",
            )
        unusable = sorted(s.value for s in scopes_of(scopes) if s in _WHOLE_SCOPES)
        if unusable:
            raise MemkgError(
                f"a grant opens one domain, so it cannot carry {', '.join(unusable)}: erase "
                "acts on every domain of the user and admin on the whole store; give the key "
                "itself those scopes, or grant read, write, decide or review",
                code="access.grant_scope",
            )
        now = self.clock.now()
        user_id = _bound_user(user_id)
        expires_at = _future(expires_at, now, "grant") or expires_at
        grant = Grant(grant_id=self.clock.new_id("grant"), key_id=key_id, domain=domain,
                      scopes=scopes_of(scopes), purpose=purpose, user_id=user_id,
                      granted_by=granted_by, created_at=now, expires_at=expires_at)  # fmt: skip
        self.store.add_grant(grant)
        return grant

    def list_grants(self, key_id: str | None = None) -> list[Grant]:
        return self.store.grants(key_id)

    def revoke_grant(self, grant_id: str) -> Grant:
        grant = self.store.revoke_grant(grant_id, self.clock.now())
        if grant is None:
            raise NotFound(f"no grant {grant_id!r}", code="access.grant_not_found")
        return grant

    def record(self, records: Sequence[AccessRecord]) -> None:
        """Append ``records`` to the audit, trying once more on a store failure: a dropped
        connection (the common one) is replaced by the next use. A reply lost after the
        records were stored leaves them twice, which is better than not at all."""
        try:
            self.store.record(records)
        except StoreError:
            self.store.record(records)

    def audit(
        self, *, subject: str | None = None, key_id: str | None = None,
        target: str | None = None, limit: int = 100, before: int | None = None,
    ) -> list[AccessRecord]:  # fmt: skip
        """The newest ``limit`` records the filters keep (at most ``AUDIT_LIMIT``), older than
        ``before`` (a record's ``position``) when given: page back through the whole audit by
        passing the last record's position (``audit_page``)."""
        return self.store.records(subject=subject, key_id=key_id, target=target,
                                  limit=min(limit, AUDIT_LIMIT), before=before)  # fmt: skip

    def audit_page(
        self, *, subject: str | None = None, key_id: str | None = None,
        target: str | None = None, limit: int = 100, before: int | None = None,
    ) -> tuple[list[AccessRecord], int | None]:  # fmt: skip
        """``audit`` and the ``before`` of the next page (``None``: the oldest were given)."""
        limit = min(limit, AUDIT_LIMIT)
        found = self.store.records(subject=subject, key_id=key_id, target=target,
                                   limit=limit + 1, before=before)  # fmt: skip
        shown = found[:limit]
        return shown, shown[-1].position if len(found) > limit else None

    def pseudonymise(self, user_id: str) -> int:
        return self.store.pseudonymise(user_id)

    def pseudonymise_erased(self, user_id: str, merged_ids: Iterable[str] = ()) -> int:
        """After the erasure of ``user_id`` and the ids merged with it (its receipt's
        ``merged_ids``): each pseudonymised in the keys, grants and audit here; the records
        changed. What an adapter calls when this store is not beside the memory, where the
        erasure's own transaction reached it (then it changes nothing)."""
        return sum(self.store.pseudonymise(erased) for erased in (user_id, *merged_ids))

    def pseudonymise_records(self, user_id: str, record_ids: Collection[str]) -> int:
        """``user_id`` replaced by its HMAC in the records ``record_ids`` only (a request's,
        about someone erased while it ran; see ``AccessStore.pseudonymise_records``)."""
        return self.store.pseudonymise_records(user_id, record_ids)

    def alias(self, user_id: str) -> str:
        """The pseudonym an erasure gives ``user_id`` in the audit."""
        return self.store.alias(user_id)


__all__ = ["Keyring", "MemoryAccessStore", "scopes_of"]
