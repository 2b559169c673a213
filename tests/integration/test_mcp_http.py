"""MCP over streamable HTTP with the service's API keys: each session serves its key's user."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")
uvicorn = pytest.importorskip("uvicorn")

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import TextContent  # noqa: E402

from memkg import Engine  # noqa: E402
from memkg.access import Keyring  # noqa: E402
from support.live_service import serve  # noqa: E402
from support.observations import obs  # noqa: E402
from support.service import keyed_app  # noqa: E402


@pytest.fixture
def served(engine: Engine) -> Iterator[tuple[str, Keyring]]:
    app, keyring = keyed_app(engine)
    with serve(app) as base:
        yield f"{base}/mcp", keyring


async def call(url: str, token: str, tool: str, args: dict[str, Any],
               headers: dict[str, str | bytes] | None = None) -> Any:  # fmt: skip
    sent = {"authorization": f"Bearer {token}", **(headers or {})}
    async with (
        httpx2.AsyncClient(headers=sent, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(tool, args)


def error_of(result: Any) -> Any:
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def test_http_sessions_are_bound_to_their_keys_user(
    served: tuple[str, Keyring], engine: Engine
) -> None:
    url, keyring = served
    u1 = keyring.create("u1's agent", ["read", "write", "decide"], ["travel"], user_id="u1")
    u2 = keyring.create("u2's agent", ["read"], ["travel"], user_id="u2")
    unbound = keyring.create("host", ["read"], ["travel"])
    decision = engine.decide("u1", "travel", {}).decision_id

    async def scenario() -> None:
        stored = await call(url, u1.token, "remember",
                            {k: v for k, v in obs().items() if k != "user_id"})  # fmt: skip
        assert not stored.is_error and stored.structured_content["status"] == "active"
        mine = await call(url, u1.token, "recall_facts", {})
        assert [f["user_id"] for f in mine.structured_content["facts"]] == ["u1"]
        theirs = await call(url, u2.token, "recall_facts", {})
        assert theirs.structured_content["facts"] == []
        other = await call(url, u2.token, "explain_decision", {"decision_id": decision})
        assert error_of(other)["error"] == "decision.not_found"
        with pytest.raises(Exception):  # noqa: B017 - the server answers 403 access.user
            await call(url, u2.token, "recall_facts", {}, {"memkg-user": "u1"})
        hosted = await call(url, unbound.token, "recall_facts", {}, {"memkg-user": "u1"})
        assert [f["user_id"] for f in hosted.structured_content["facts"]] == ["u1"]
        write = await call(url, u2.token, "remember",
                           {k: v for k, v in obs().items() if k != "user_id"})  # fmt: skip
        assert error_of(write)["error"] == "access.scope"
        # what u1's agent was given, shown to u1's agent and to no one else's
        profile = await call(url, u1.token, "render_profile", {"domain": "travel"})
        traced = profile.structured_content["trace_id"]
        shown = await call(url, u1.token, "trace", {"trace_id": traced})
        assert shown.structured_content["user_id"] == "u1"
        hidden = await call(url, u2.token, "trace", {"trace_id": traced})
        assert error_of(hidden)["error"] == "trace.not_found"
        # a recall over every domain lists each domain's facts: not for a travel-only key
        everywhere = engine.recall("u1", "airline", k=3).trace_id
        assert everywhere is not None
        spanning = await call(url, u1.token, "trace", {"trace_id": everywhere})
        assert error_of(spanning)["error"] == "trace.not_found"

    anyio.run(scenario)
    assert len(engine.facts("u1")) == 1 and engine.facts("u2") == []
    actions = {(r.key_id, r.action, r.subject, r.status) for r in keyring.audit()}
    assert (u1.key.key_id, "mcp.remember", "u1", 200) in actions
    assert (u2.key.key_id, "mcp.remember", "u2", 403) in actions


def test_http_mcp_needs_a_key_and_its_user(served: tuple[str, Keyring]) -> None:
    url, keyring = served
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"accept": "application/json, text/event-stream"}
    refused = httpx2.post(url, json=message, headers=accept)
    assert refused.status_code == 401 and refused.json()["error"] == "auth.required"
    bound = keyring.create("u2's agent", ["read"], ["travel"], user_id="u2").token
    spoof = httpx2.post(url, json=message, headers={**accept, "authorization": f"Bearer {bound}",
                                                    "memkg-user": "u1"})  # fmt: skip
    assert spoof.status_code == 403 and spoof.json()["error"] == "access.user"
    unbound = keyring.create("host", ["read"], ["travel"]).token
    auth = {"authorization": f"Bearer {unbound}"}
    nobody = httpx2.post(url, json=message, headers={**accept, **auth})
    assert nobody.status_code == 400 and nobody.json()["error"] == "mcp.user_missing"


def test_http_mcp_records_the_grant_and_purpose_of_each_call(
    served: tuple[str, Keyring], engine: Engine
) -> None:
    """As over /v1: a read through a grant carries the grant and its purpose, and the
    Memkg-Purpose header (UTF-8, control characters dropped) says why when given."""
    url, keyring = served
    agent = keyring.create("travel agent", ["read"], ["travel"], user_id="u1")
    grant = keyring.grant(agent.key.key_id, "health", "care plan",
                          engine.clock.now() + timedelta(days=1))  # fmt: skip

    async def scenario() -> None:
        await call(url, agent.token, "recall_facts", {"domain": "health"})
        await call(url, agent.token, "recall_facts", {})  # health among the domains it lists
        why = "Prüfung\x01 der Reise".encode()  # a header's bytes, UTF-8
        await call(url, agent.token, "recall_facts", {"domain": "travel"}, {"memkg-purpose": why})

    anyio.run(scenario)
    found = {(r.action, r.domain, r.grant_id, r.purpose) for r in keyring.audit(subject="u1")}
    assert ("mcp.recall_facts", "health", grant.grant_id, "care plan") in found
    assert ("mcp.recall_facts", "travel", None, "Prüfung der Reise") in found
    listed = [r for r in keyring.audit(subject="u1") if r.action == "mcp.recall_facts"]
    # the recall of every domain: one record for the key's own (travel), one for the grant
    assert sorted(((r.domain or ""), r.grant_id or "") for r in listed) == [
        ("", ""), ("health", grant.grant_id), ("health", grant.grant_id), ("travel", "")
    ]


def test_http_mcp_records_each_grant_a_read_of_several_domains_used(
    served: tuple[str, Keyring], engine: Engine
) -> None:
    url, keyring = served
    agent = keyring.create("travel agent", ["read"], ["travel"], user_id="u1")
    until = engine.clock.now() + timedelta(days=1)
    grants = [keyring.grant(agent.key.key_id, d, f"{d} care", until) for d in ("commerce",
                                                                              "health")]

    async def scenario() -> None:
        await call(url, agent.token, "recall_facts", {})

    anyio.run(scenario)
    found = sorted(((r.domain or ""), r.grant_id or "") for r in keyring.audit(subject="u1"))
    assert found == [("", ""), *sorted((g.domain, g.grant_id) for g in grants)]


def test_http_mcp_records_the_grant_that_allowed_the_call_not_another_of_its_domain(
    served: tuple[str, Keyring], engine: Engine
) -> None:
    url, keyring = served
    agent = keyring.create("travel agent", ["read", "write"], ["travel"], user_id="u1")
    until = engine.clock.now() + timedelta(days=1)
    reading = keyring.grant(agent.key.key_id, "health", "care reading", until)
    writing = keyring.grant(agent.key.key_id, "health", "care plan update", until,
                            scopes=["write"])  # fmt: skip
    said = {"domain": "health", "key": "child.age", "value": 4, "source": "dialogue",
            "provenance": {"consent_granted": True}}  # fmt: skip

    async def scenario() -> None:
        stored = await call(url, agent.token, "remember", said)
        assert not stored.is_error, stored
        fact_id = stored.structured_content["fact_id"]
        forgot = await call(url, agent.token, "forget", {"fact_id": fact_id, "reason": "asked"})
        assert not forgot.is_error, forgot

    anyio.run(scenario)
    found = {(r.action, r.domain, r.grant_id) for r in keyring.audit(subject="u1")}
    assert ("mcp.remember", "health", writing.grant_id) in found
    assert ("mcp.forget", "health", writing.grant_id) in found  # its domain found by the tool
    assert not {g for _, _, g in found} & {reading.grant_id}
