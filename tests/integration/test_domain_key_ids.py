"""An id of a domain the caller's key does not reach is answered as an id never made, over
HTTP and MCP: the answer tells neither that the id exists nor its domain."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("starlette")
pytest.importorskip("mcp")

from mcp.server.mcpserver import Context  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

from memkg import Engine  # noqa: E402
from memkg.access import Keyring, MemoryAccessStore  # noqa: E402
from memkg.service.mcp import Subject, build_server, local_subject  # noqa: E402
from support.observations import CONSENTED, obs  # noqa: E402
from support.service import client, keyed_app, token  # noqa: E402

HEALTH = obs(domain="health", key="child.age", value=3, source="profile", **CONSENTED)


def unknown(made: str) -> str:
    """An id of the same shape as ``made`` that nothing was given."""
    return made[:-4] + ("zzzz" if not made.endswith("zzzz") else "yyyy")


def seeded(engine: Engine) -> dict[str, dict[str, str]]:
    """For each domain: a fact, a decision and its trace of user u1."""
    made: dict[str, dict[str, str]] = {}
    for observation in (obs(), HEALTH):
        domain = observation["domain"]
        fact = engine.ingest(observation).fact_id
        decision = engine.decide("u1", domain, {})
        assert fact is not None and decision.trace_id is not None
        made[domain] = {"fact": fact, "decision": decision.decision_id,
                        "trace": decision.trace_id}  # fmt: skip
    return made


def test_http_answers_another_domain_s_ids_as_unknown_ones(engine: Engine) -> None:
    made = seeded(engine)
    everywhere = engine.recall("u1", "airline child age", k=5).trace_id  # spans every domain
    assert everywhere is not None
    app, keyring = keyed_app(engine)
    travel = client(app, token(keyring, ["read", "write", "decide"], ["travel"]))
    health = made["health"]
    asks = [
        ("GET", "/v1/decisions/{}", health["decision"], None),
        ("GET", "/v1/decisions/{}?format=md", health["decision"], None),
        ("POST", "/v1/decisions/{}/replay", health["decision"], None),
        ("GET", "/v1/traces/{}", health["trace"], None),
        ("GET", "/v1/traces/{}", everywhere, None),
        ("POST", "/v1/users/u1/facts/{}/retract", health["fact"], {"reason": "x"}),
        ("POST", "/v1/users/u1/facts/{}/confirm", health["fact"], None),
    ]
    for method, path, hidden, body in asks:
        shown = travel.request(method, path.format(hidden), json=body)
        never = travel.request(method, path.format(unknown(hidden)), json=body)
        assert never.status_code == 404, (path, never.text)
        assert shown.status_code == never.status_code, (path, shown.text)
        assert shown.json() == json.loads(never.text.replace(unknown(hidden), hidden)), path
        assert "health" not in shown.text
    assert [f.id for f in engine.facts("u1", "health")] == [health["fact"]]  # still there

    # its own domain's ids answer as before
    mine = made["travel"]
    assert travel.get(f"/v1/decisions/{mine['decision']}").status_code == 200
    assert travel.post(f"/v1/decisions/{mine['decision']}/replay").status_code == 200
    assert travel.get(f"/v1/traces/{mine['trace']}").status_code == 200
    retracted = travel.post(f"/v1/users/u1/facts/{mine['fact']}/retract", json={"reason": "x"})
    assert retracted.status_code == 200 and retracted.json()["status"] == "retracted"
    # a domain the caller names itself is refused as such: that tells it nothing new
    named = travel.get("/v1/users/u1/facts", params={"domain": "health"})
    assert named.status_code == 403 and named.json()["error"] == "access.domain"
    # a key for every domain sees them all
    every = client(app, token(keyring, ["read"], ["*"]))
    assert every.get(f"/v1/decisions/{health['decision']}").status_code == 200
    assert every.get(f"/v1/traces/{health['trace']}").status_code == 200
    assert every.get(f"/v1/traces/{everywhere}").status_code == 200
    # the probes are in the access audit, under the user they reached
    probes = [r for r in keyring.audit(target=health["decision"]) if r.status == 404]
    assert probes and {r.subject for r in probes} == {"u1"}


def test_http_a_domain_the_key_may_read_keeps_its_refusal_to_change_it(engine: Engine) -> None:
    """A grant to read health: the key may see the fact, so a retraction is refused for the
    domain, not answered as an unknown fact."""
    made = seeded(engine)
    app, keyring = keyed_app(engine)
    issued = keyring.create("travel agent", ["read", "write"], ["travel"])
    keyring.grant(issued.key.key_id, "health", "fever triage", engine.clock.now() +
                  timedelta(days=1))  # fmt: skip
    agent = client(app, issued.token)
    fact = made["health"]["fact"]
    assert agent.get(f"/v1/decisions/{made['health']['decision']}").status_code == 200
    refused = agent.post(f"/v1/users/u1/facts/{fact}/retract", json={"reason": "x"})
    assert refused.status_code == 403 and refused.json()["error"] == "access.domain"


def test_http_answers_a_review_of_another_domain_as_one_never_opened(engine: Engine) -> None:
    engine.ingest(obs(value="airline:SQ"))  # three close claims: the key is frozen for review
    engine.ingest(obs(value="airline:CZ", source="behavior", confidence=0.95))
    engine.ingest(obs(value="airline:CA", source="profile", confidence=0.95))
    app, keyring = keyed_app(engine)
    [review] = client(app, token(keyring)).get("/v1/reviews").json()["reviews"]
    review_id, body = review["review_id"], {"value": "airline:SQ", "note": "by phone"}
    health = client(app, token(keyring, ["review"], ["health"]))
    hidden = health.post(f"/v1/reviews/{review_id}/resolve", json=body)
    never = health.post(f"/v1/reviews/{unknown(review_id)}/resolve", json=body)
    assert hidden.status_code == never.status_code == 404
    assert hidden.json() == json.loads(never.text.replace(unknown(review_id), review_id))
    travel = client(app, token(keyring, ["review"], ["travel"]))
    assert travel.post(f"/v1/reviews/{review_id}/resolve", json=body).status_code == 200


def answer(result: CallToolResult) -> Any:
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def travel_subjects(engine: Engine) -> list[Subject]:
    """A session of a key for travel, and a session started for travel only (no key)."""
    keyring = Keyring(MemoryAccessStore(), engine.clock)
    issued = keyring.create("agent", ["read", "write", "decide"], ["travel"], user_id="u1")
    return [Subject("u1", keyring.authenticate(issued.token)), local_subject("u1", ["travel"])]


@pytest.mark.parametrize("which", ["key", "session"])
def test_mcp_answers_another_domain_s_ids_as_unknown_ones(engine: Engine, which: str) -> None:
    made = seeded(engine)
    everywhere = engine.recall("u1", "airline child age", k=5).trace_id
    assert everywhere is not None
    subject = travel_subjects(engine)[["key", "session"].index(which)]
    server = build_server(engine, subject)
    health, mine = made["health"], made["travel"]
    asks = [
        ("explain_decision", "decision_id", health["decision"], {}),
        ("explain_decision", "decision_id", health["decision"], {"format": "json"}),
        ("trace", "trace_id", health["trace"], {}),
        ("trace", "trace_id", everywhere, {}),
        ("forget", "fact_id", health["fact"], {"reason": "x"}),
    ]

    async def calls() -> None:
        context = Context(mcp_server=server)
        for tool, name, hidden, rest in asks:
            shown = await server.call_tool(tool, {name: hidden, **rest}, context)
            never = await server.call_tool(tool, {name: unknown(hidden), **rest}, context)
            assert never.is_error and shown.is_error, (tool, answer(shown))
            told = json.loads(json.dumps(answer(never)).replace(unknown(hidden), hidden))
            assert answer(shown) == told, tool
            assert "health" not in json.dumps(answer(shown))
        # its own domain's ids answer as before
        explained = await server.call_tool("explain_decision",
                                           {"decision_id": mine["decision"]}, context)  # fmt: skip
        assert not explained.is_error
        traced = await server.call_tool("trace", {"trace_id": mine["trace"]}, context)
        assert not traced.is_error and traced.structured_content["domain"] == "travel"
        forgot = await server.call_tool("forget", {"fact_id": mine["fact"], "reason": "x"},
                                        context)  # fmt: skip
        assert not forgot.is_error and forgot.structured_content["status"] == "retracted"
        # a domain the caller names itself is refused as such
        named = await server.call_tool("recall_facts", {"domain": "health"}, context)
        assert named.is_error and answer(named)["error"] == "access.domain"

    anyio.run(calls)
    assert [f.id for f in engine.facts("u1", "health")] == [health["fact"]]
