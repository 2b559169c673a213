"""A session started for some domains is refused the others with a message about the session,
not about its key: a key's own domain left out of the session is not "not among its domains",
and a session without a key has no grant to ask for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memkg.access import Keyring, MemoryAccessStore
from memkg.access.model import ApiScope
from memkg.clock import FrozenClock
from memkg.errors import AccessDenied
from memkg.service.mcp import local_subject

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def test_a_keyed_session_started_for_a_granted_domain_names_the_session() -> None:
    ring = Keyring(MemoryAccessStore(), FrozenClock(T0))
    issued = ring.create("agent", ["read"], ["travel"], user_id="u1")
    ring.grant(issued.key.key_id, "health", "triage", T0 + timedelta(hours=1), scopes=["read"])
    session = ring.authenticate(issued.token).within(["health"])
    assert session.check(ApiScope.READ, "health", "u1") is not None  # through the grant
    with pytest.raises(AccessDenied) as refused:
        session.check(ApiScope.READ, "travel", "u1")
    assert refused.value.code == "access.domain"
    assert refused.value.message.startswith("this session serves domain health only")
    # narrowed twice, it keeps what both allow
    assert session.within(["health", "travel"]).session == frozenset({"health"})
    # a domain neither the key nor a grant opens: the key's refusal, not "start a session"
    with pytest.raises(AccessDenied) as beyond:
        session.check(ApiScope.READ, "finance", "u1")
    assert beyond.value.message.startswith(f"key {issued.key.key_id} may not use domain")
    assert "its domains are travel" in beyond.value.message


def test_a_session_without_a_key_is_not_sent_for_a_grant() -> None:
    principal = local_subject("u1", ["travel"]).principal
    with pytest.raises(AccessDenied) as refused:
        principal.check(ApiScope.READ, "health", "u1")
    assert "grant" not in refused.value.message
    assert "travel" in refused.value.message and "health" in refused.value.message
    assert local_subject("u1").principal.check(ApiScope.READ, "health", "u1") is None
