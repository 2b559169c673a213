"""The ``AccessStore`` port: keys (with the hash of their secret), grants, the access audit.

Adapters keep these beside the memory they guard (the SQLite file, the PostgreSQL schema), so
a backup, a restore or an erasure treats them together. ``pseudonymise`` replaces an erased
subject's id, wherever the store holds it, by ``hmac:<hex>`` under a random key of the store's.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol

from memkg.access.model import AccessRecord, ApiKey, Grant

AUDIT_LIMIT = 1_000
"""The most audit records one query returns."""


def positioned(body: str | bytes, seq: int) -> AccessRecord:
    """A stored audit record read back with its place in the audit."""
    return AccessRecord.model_validate_json(body).model_copy(update={"position": seq})


def audit_filter(
    subject: str | None, key_id: str | None, target: str | None, mark: str, target_sql: str
) -> tuple[str, tuple[str, ...]]:
    """The SQL condition and arguments of an audit query keeping to the filters given (none:
    ``TRUE``): only those asked for, so that the subject and key indexes serve them (a test
    of ``? IS NULL OR subject = ?`` keeps an index out of use). ``mark`` is the driver's
    placeholder, ``target_sql`` how the store reads a record's target."""
    # with a subject, its index serves (a key's records span many subjects): the key test is
    # then written so that no planner takes the key index instead
    key_sql = "key_id || ''" if subject is not None else "key_id"
    parts = [(f"subject = {mark}", subject), (f"{key_sql} = {mark}", key_id),
             (f"{target_sql} = {mark}", target)]  # fmt: skip
    kept = [(sql, value) for sql, value in parts if value is not None]
    return " AND ".join(sql for sql, _ in kept) or "TRUE", tuple(v for _, v in kept)


class AccessStore(Protocol):
    """Where keys, grants and access records live."""

    read_only: bool
    """Keys and grants read, every write refused (a file this process may not write)."""

    def add_key(self, key: ApiKey, digest: str) -> None: ...

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key and the hash of its secret."""
        ...

    def keys(self) -> list[ApiKey]: ...

    def revoke_key(self, key_id: str, at: datetime) -> ApiKey | None: ...

    def add_grant(self, grant: Grant) -> None: ...

    def grants(self, key_id: str | None = None) -> list[Grant]: ...

    def revoke_grant(self, grant_id: str, at: datetime) -> Grant | None: ...

    def record(self, records: Sequence[AccessRecord]) -> None: ...

    def records(
        self, *, subject: str | None = None, key_id: str | None = None,
        target: str | None = None, limit: int = 100, before: int | None = None,
    ) -> list[AccessRecord]:  # fmt: skip
        """The newest records first, filtered by subject, key and target (a fact, decision)."""
        ...

    def pseudonymise(self, user_id: str) -> int:
        """Replace ``user_id`` everywhere by its HMAC; how many rows changed."""
        ...

    def pseudonymise_records(self, user_id: str, record_ids: Collection[str]) -> int:
        """Replace ``user_id`` by its HMAC in the audit records ``record_ids`` only (as their
        subject or target): the records of a request about someone erased while it ran, its
        keys and grants left alone. How many records changed."""
        ...

    def alias(self, user_id: str) -> str:
        """What ``pseudonymise`` replaces ``user_id`` by."""
        ...

    def close(self) -> None: ...


def pseudonym(secret: bytes, user_id: str) -> str:
    return (
        "hmac:"
        + hmac.new(secret, user_id.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    )


def aliased(record: AccessRecord, user_id: str, alias: str) -> AccessRecord:
    """``record`` with ``user_id`` as its subject or target replaced by ``alias``."""
    update = {name: alias for name in ("subject", "target") if getattr(record, name) == user_id}
    return record.model_copy(update=update)


def aliased_rows(
    rows: Sequence[tuple[int, str]], user_id: str, record_ids: Collection[str], alias: str
) -> list[tuple[str | None, str, int]]:
    """Of audit ``rows`` (seq, stored body) about ``user_id``, those of ``record_ids``
    rewritten with ``alias`` for it: (subject, body, seq), what a store's update sets
    (``AccessStore.pseudonymise_records``)."""
    found = []
    for seq, body in rows:
        record = AccessRecord.model_validate_json(body)
        if record.record_id in record_ids:
            record = aliased(record, user_id, alias)
            found.append((record.subject, record.model_dump_json(exclude={"position"}), seq))
    return found


def revoked_key(key: ApiKey, at: datetime) -> ApiKey:
    return key if key.revoked_at else key.model_copy(update={"revoked_at": at})


def revoked_grant(grant: Grant, at: datetime) -> Grant:
    return grant if grant.revoked_at else grant.model_copy(update={"revoked_at": at})


class MemoryAccessStore:
    """The in-memory twin (tests, and a server over an in-memory engine)."""

    read_only = False

    def __init__(self) -> None:
        self._keys: dict[str, tuple[ApiKey, str]] = {}
        self._grants: dict[str, Grant] = {}
        self._records: list[AccessRecord] = []
        self._secret = os.urandom(32)
        self._lock = threading.Lock()

    def add_key(self, key: ApiKey, digest: str) -> None:
        with self._lock:
            self._keys[key.key_id] = (key, digest)

    def key(self, key_id: str) -> tuple[ApiKey, str] | None:
        return self._keys.get(key_id)

    def keys(self) -> list[ApiKey]:
        return sorted((k for k, _ in self._keys.values()), key=lambda k: k.key_id)

    def revoke_key(self, key_id: str, at: datetime) -> ApiKey | None:
        with self._lock:
            found = self._keys.get(key_id)
            if found is None:
                return None
            key = revoked_key(found[0], at)
            self._keys[key_id] = (key, found[1])
            return key

    def add_grant(self, grant: Grant) -> None:
        with self._lock:
            self._grants[grant.grant_id] = grant

    def grants(self, key_id: str | None = None) -> list[Grant]:
        found = [g for g in self._grants.values() if key_id is None or g.key_id == key_id]
        return sorted(found, key=lambda g: g.grant_id)

    def revoke_grant(self, grant_id: str, at: datetime) -> Grant | None:
        with self._lock:
            grant = self._grants.get(grant_id)
            if grant is None:
                return None
            self._grants[grant_id] = revoked_grant(grant, at)
            return self._grants[grant_id]

    def record(self, records: Sequence[AccessRecord]) -> None:
        with self._lock:
            self._records.extend(records)

    def records(
        self, *, subject: str | None = None, key_id: str | None = None,
        target: str | None = None, limit: int = 100, before: int | None = None,
    ) -> list[AccessRecord]:  # fmt: skip
        found = [
            r.model_copy(update={"position": at})
            for at, r in reversed(list(enumerate(self._records, 1)))
            if (subject is None or r.subject == subject)
            and (key_id is None or r.key_id == key_id)
            and (target is None or r.target == target)
            and (before is None or at < before)
        ]
        return found[: min(limit, AUDIT_LIMIT + 1)]

    def alias(self, user_id: str) -> str:
        return pseudonym(self._secret, user_id)

    def pseudonymise(self, user_id: str) -> int:
        alias = pseudonym(self._secret, user_id)
        changed = 0
        with self._lock:
            for i, r in enumerate(self._records):
                if r.subject == user_id:
                    self._records[i] = r = r.model_copy(update={"subject": alias})
                    changed += 1
                if r.target == user_id:  # a merge's other id
                    self._records[i] = r.model_copy(update={"target": alias})
                    changed += 1
            for key_id, (key, digest) in list(self._keys.items()):
                if key.user_id == user_id:
                    self._keys[key_id] = (key.model_copy(update={"user_id": alias}), digest)
                    changed += 1
            for grant_id, grant in list(self._grants.items()):
                if grant.user_id == user_id:
                    self._grants[grant_id] = grant.model_copy(update={"user_id": alias})
                    changed += 1
        return changed

    def pseudonymise_records(self, user_id: str, record_ids: Collection[str]) -> int:
        alias, changed = pseudonym(self._secret, user_id), 0
        with self._lock:
            for i, r in enumerate(self._records):
                if r.record_id in record_ids and user_id in (r.subject, r.target):
                    self._records[i] = aliased(r, user_id, alias)
                    changed += 1
        return changed

    def close(self) -> None:
        pass
