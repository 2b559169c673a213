"""How an MCP session is started and called at its edges: misspelt domains, ids no write
accepts, a key narrowed to some of its domains, arguments outside what a tool takes."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")

from mcp.server.mcpserver import Context  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

from memkg import Engine, MemkgError  # noqa: E402
from memkg.access import Keyring  # noqa: E402
from memkg.access.sqlite import SqliteAccessStore  # noqa: E402
from memkg.cli import main  # noqa: E402
from memkg.service.mcp import build_server, local_subject, subject_from  # noqa: E402
from support.observations import CONSENTED, obs  # noqa: E402
from support.service import client, keyed_app, token  # noqa: E402

HEALTH = obs(domain="health", key="child.age", value=3, source="dialogue", **CONSENTED)


def answer(result: CallToolResult) -> Any:
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def started(db: Path, *argv: str) -> tuple[int, dict[str, Any]]:
    """``memkg mcp`` refused: why, read from standard error; its standard output (the
    protocol's, where a host reads JSON-RPC) holds nothing."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["--db", str(db), "mcp", *argv], out)
    assert out.getvalue() == ""
    return code, json.loads(err.getvalue().splitlines()[-1])


def test_a_misspelt_domain_stops_the_session_before_it_serves(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    code, refused = started(db, "--user", "u1", "--domain", "travle")
    assert code == 1 and refused["error"] == "domain.unknown"
    assert "travle" in refused["message"] and "travel" in refused["message"]
    with Engine.open(db) as engine:
        ring = Keyring(SqliteAccessStore(db), engine.clock)
        issued = ring.create("agent", ["read", "write"], ["*"], user_id="u1")
        with pytest.raises(MemkgError) as keyed:
            subject_from(engine, db, None, ["travle"], issued.token)
        assert keyed.value.code == "domain.unknown"


@pytest.mark.parametrize("user", ["li na", "li/na", "-u1", "x" * 129])
def test_a_session_for_an_id_no_write_accepts_is_refused_at_start(
    tmp_path: Path, user: str
) -> None:
    code, refused = started(tmp_path / "m.db", f"--user={user}")
    assert code == 1 and refused["error"] == "mcp.user_invalid", refused


def test_domains_given_with_a_key_narrow_the_session(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Engine.open(db) as engine:
        engine.ingest(obs())
        engine.ingest(HEALTH)
        ring = Keyring(SqliteAccessStore(db), engine.clock)
        issued = ring.create("agent", ["read", "write", "decide"], ["*"], user_id="u1")
        subject, audit = subject_from(engine, db, None, ["travel"], issued.token)
        server = build_server(engine, subject, audit=audit)

        async def calls() -> None:
            context = Context(mcp_server=server)
            listed = await server.call_tool("list_domains", {}, context)
            assert answer(listed) == {"domains": ["travel"]}
            every = answer(await server.call_tool("recall_facts", {}, context))
            assert {f["domain"] for f in every["facts"]} == {"travel"}
            health = await server.call_tool("recall_facts", {"domain": "health"}, context)
            assert health.is_error and answer(health)["error"] == "access.domain"
            wrote = await server.call_tool("remember", {k: v for k, v in HEALTH.items()
                                                        if k != "user_id"}, context)  # fmt: skip
            assert wrote.is_error and answer(wrote)["error"] == "access.domain"

        anyio.run(calls)
        assert len(engine.facts("u1", "health")) == 1


def test_explain_decision_refuses_a_format_it_cannot_render(engine: Engine) -> None:
    engine.ingest(obs())
    decision = engine.decide("u1", "travel", {}).decision_id
    server = build_server(engine, local_subject("u1"))

    async def calls() -> None:
        refused = await server.call_tool("explain_decision",
                                         {"decision_id": decision, "format": "xml"})  # fmt: skip
        assert refused.is_error
        found = answer(refused)
        assert found["error"] == "tool.arguments" and found["problems"][0]["path"] == "$.format"
        # an argument the tool does not take is named; only a user id is told why it cannot be
        extra = answer(await server.call_tool("recall_facts", {"query": "seat"}))
        assert extra["message"] == "recall_facts takes no query: see the tool's input schema"
        other = answer(await server.call_tool("recall_facts", {"user_id": "u2"}))
        assert "this session serves one user" in other["message"]
        shown = await server.call_tool("explain_decision", {"decision_id": decision,
                                                            "format": "md"})  # fmt: skip
        assert not shown.is_error

    anyio.run(calls)


def test_the_user_header_must_be_a_user_id(engine: Engine) -> None:
    app, keyring = keyed_app(engine)
    headers = {"memkg-user": "li na", "accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "recall_facts", "arguments": {}}}  # fmt: skip
    with client(app, token(keyring, ["read"], ["travel"]), headers=headers) as http:
        refused = http.post("/mcp", json=call)
    assert refused.status_code == 400 and refused.json()["error"] == "mcp.user_invalid"
    # a name sent in UTF-8 is quoted back as written, not as its bytes read as Latin-1
    utf8 = {**headers, "memkg-user": "李娜".encode()}
    with client(app, token(keyring, ["read"], ["travel"]), headers=utf8) as http:
        named = http.post("/mcp", json=call)
    assert named.status_code == 400 and "'李娜'" in named.json()["message"]


def test_a_keyed_session_stops_serving_once_its_key_is_revoked_or_its_grant_ends(
    tmp_path: Path,
) -> None:
    from datetime import timedelta

    from memkg.clock import FrozenClock
    from support.observations import T0

    db = tmp_path / "m.db"
    clock = FrozenClock(T0)
    with Engine.open(db, clock=clock) as engine:
        engine.ingest(obs())
        engine.ingest(HEALTH)
        ring = Keyring(SqliteAccessStore(db), engine.clock)
        issued = ring.create("agent", ["read"], ["travel"], user_id="u1")
        ring.grant(issued.key.key_id, "health", "triage", T0 + timedelta(days=1))
        subject, audit = subject_from(engine, db, None, [], issued.token)
        server = build_server(engine, subject, audit=audit)

        async def recall(domain: str) -> CallToolResult:
            return await server.call_tool("recall_facts", {"domain": domain},
                                          Context(mcp_server=server))  # fmt: skip

        async def calls() -> None:
            assert not (await recall("health")).is_error
            clock.advance(timedelta(days=2))  # the grant ended
            ended = await recall("health")
            assert ended.is_error and answer(ended)["error"] == "access.domain"
            assert not (await recall("travel")).is_error
            ring.revoke(issued.key.key_id)
            revoked = await recall("travel")
            assert revoked.is_error and answer(revoked)["error"] == "auth.invalid"

        anyio.run(calls)


def test_claims_reads_the_turn_it_is_asked_in(engine: Engine) -> None:
    """A turn instruction counts only in its turn: ``claims`` takes the turn, as ``decide``
    does, so an agent reads the key as a decision in that turn would."""
    engine.ingest(obs(key="seat.preference", value="aisle", source="profile"))
    engine.ingest(obs(key="seat.preference", value="window", scope="turn", session_id="s1",
                      provenance={"source_ref": "t1"}))  # fmt: skip
    server = build_server(engine, local_subject("u1"))

    async def calls() -> None:
        for turn, held, tier in (("t1", "window", "turn"), ("t2", "window", "session")):
            found = answer(await server.call_tool("claims", {
                "key": "seat.preference", "session_id": "s1", "turn": turn}))  # fmt: skip
            won = [c for c in found["claims"] if c["standing"] == "won"]
            assert found["value"] == held and [c["scope"] for c in won] == [tier], turn

    anyio.run(calls)


def test_an_argument_of_the_wrong_type_is_refused_not_converted(engine: Engine) -> None:
    """A flag, a count or a confidence sent as another type is a tool.arguments refusal, as
    HTTP answers it: "no" or 0 never turns memory off, true is no limit of 1."""
    engine.ingest(obs())
    server = build_server(engine, local_subject("u1"))

    async def calls() -> None:
        for arguments in ({"enabled": "no"}, {"enabled": 0}, {"enabled": "False"}):
            refused = await server.call_tool("set_memory", arguments)
            assert refused.is_error and answer(refused)["error"] == "tool.arguments", arguments
            assert answer(refused)["problems"][0]["path"] == "$.enabled"
        for tool, arguments in (("recall_facts", {"limit": True}),
                                ("remember", {**{k: v for k, v in obs().items() if k != "user_id"},
                                              "confidence": True}),
                                ("recall", {"query": "seat", "domain": "travel",
                                            "k": True})):  # fmt: skip
            refused = await server.call_tool(tool, arguments)
            assert refused.is_error and answer(refused)["error"] == "tool.arguments", arguments

    anyio.run(calls)
    assert engine.memory_state("u1").enabled and len(engine.facts("u1")) == 1


@pytest.mark.parametrize("source", ["system", "profile", "third_party", "rule"])
def test_the_model_cannot_claim_a_record_of_another_system(engine: Engine, source: str) -> None:
    """A clinic's record of the user's allergies (``profile``) holds until a claim as trusted
    replaces it: ``remember`` takes what the user said or did, so the model (or text it was
    handed) cannot write an empty list as ``system`` with ``change`` and wipe the record; the
    same write as dialogue waits for confirmation and leaves the record in force."""
    allergies = obs(domain="health", key="medical.allergies", value=["allergen:penicillin"],
                    source="profile", **CONSENTED)  # fmt: skip
    engine.ingest(allergies)
    server = build_server(engine, local_subject("u1"))
    said = {"domain": "health", "key": "medical.allergies", "value": [], "change": True,
            "provenance": CONSENTED["provenance"]}  # fmt: skip

    async def calls() -> None:
        refused = await server.call_tool("remember", {**said, "source": source})
        assert refused.is_error and answer(refused)["error"] == "tool.arguments"
        assert answer(refused)["problems"][0]["path"] == "$.source"
        told = await server.call_tool("remember", {**said, "source": "dialogue"})
        assert not told.is_error, answer(told)

    anyio.run(calls)
    held = engine.resolve("u1", "health", "medical.allergies")
    assert held.value == ["allergen:penicillin"]
    stored = {(f.source.value, f.status.value) for f in engine.facts("u1", "health")}
    assert stored == {("profile", "active"), ("dialogue", "pending_confirmation")}
