"""An MCP session serves one user: it cannot reach another user's memory, whatever it sends."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

from memkg import Engine, EngineConfig, MemkgError  # noqa: E402
from memkg.service.mcp import build_server, local_subject  # noqa: E402
from support.observations import CONSENTED, obs  # noqa: E402

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def error_of(result: CallToolResult) -> Any:
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def test_a_session_cannot_reach_another_user(tmp_path: Path) -> None:
    db = tmp_path / "memkg.db"
    with Engine.open(db) as engine:
        fact = engine.ingest(obs(user_id="u1")).fact_id
        engine.ingest(obs(user_id="u1", domain="health", key="child.age", value=3,
                          source="profile", **CONSENTED))  # fmt: skip
        engine.ingest(obs(user_id="u2", domain="health", key="child.age", value=5,
                          source="profile", **CONSENTED))  # fmt: skip
        decision = engine.decide("u1", "travel", {}).decision_id

    async def session() -> None:
        server = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memkg.service.mcp", "--db", str(db), "--user", "u2",
                  "--domain", "travel"],
            env={"PYTHONPATH": str(ENGINE)},
        )  # fmt: skip
        async with stdio_client(server) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            mine = await s.call_tool("recall_facts", {})
            assert mine.structured_content == {"user_id": "u2", "as_of": None, "version": 1,
                                           "facts": [], "next": None}  # fmt: skip
            asked = error_of(await s.call_tool("recall_facts", {"user_id": "u1"}))
            assert asked["error"] == "tool.arguments"
            assert asked["problems"][0]["code"] == "argument.unknown"
            health = error_of(await s.call_tool("render_profile", {"domain": "health"}))
            assert health["error"] == "access.domain"  # its own health data too: not its domain
            # no key here to be granted anything: the session's start is what to change
            assert health["message"].startswith("this session serves domain travel only")
            assert error_of(await s.call_tool("explain_decision", {"decision_id": decision})
                            )["error"] == "decision.not_found"  # fmt: skip
            forgot = await s.call_tool("forget", {"fact_id": fact, "reason": "x"})
            assert error_of(forgot)["error"] == "fact.not_found"
            typed = error_of(await s.call_tool("render_profile", {"domain": "travel",
                                                                   "budget": "lots"}))  # fmt: skip
            assert typed["error"] == "tool.arguments" and typed["problems"][0]["path"] == "$.budget"
            stored = await s.call_tool("remember", {k: v for k, v in obs().items()
                                                    if k != "user_id"})  # fmt: skip
            assert not stored.is_error
            nan = {**{k: v for k, v in obs().items() if k != "user_id"}, "confidence": math.nan}
            refused = error_of(await s.call_tool("remember", nan))  # the client sends null
            assert refused["error"] == "tool.arguments"
            assert refused["problems"][0]["path"] == "$.confidence"
            domains = await s.call_tool("list_domains", {})
            assert domains.structured_content == {"domains": ["travel"]}

    anyio.run(session)
    with Engine.open(db) as engine:
        assert [f.id for f in engine.facts("u1", "travel")] == [fact]  # untouched
        assert [f.user_id for f in engine.facts("u2", "travel")] == ["u2"]


def test_non_finite_numbers_are_refused(engine: Engine) -> None:
    server = build_server(engine, local_subject("u1"))

    async def calls() -> None:
        nan = await server.call_tool("remember", {
            "domain": "travel", "key": "airline.preferred", "value": "airline:MU",
            "source": "dialogue", "confidence": float("nan")})  # fmt: skip
        assert error_of(nan)["problems"][0]["path"] == "$.confidence"
        inf = await server.call_tool("decide", {"domain": "travel",
                                                "context": {"x": float("inf")}})  # fmt: skip
        assert error_of(inf)["error"] == "value.non_finite"

    anyio.run(calls)
    assert engine.facts("u1") == []


def test_a_keyed_stdio_session_serves_the_keys_user_and_is_audited(tmp_path: Path) -> None:
    from mcp.server.mcpserver import Context

    from memkg.access import Keyring
    from memkg.access.sqlite import SqliteAccessStore
    from memkg.service.mcp import subject_from

    db = tmp_path / "m.db"
    with Engine.open(db) as engine:
        ring = Keyring(SqliteAccessStore(db), engine.clock)
        issued = ring.create("agent", ["read", "write"], ["travel"], user_id="u1")
        subject, audit = subject_from(engine, db, None, [], issued.token)
        assert subject.user_id == "u1" and audit is not None
        server = build_server(engine, subject, audit=audit)

        async def calls() -> None:
            await server.call_tool("recall_facts", {}, Context(mcp_server=server))
            await server.call_tool("render_profile", {"domain": "health"},
                                   Context(mcp_server=server))  # fmt: skip

        anyio.run(calls)
        seen = [(r.action, r.subject, r.key_id, r.status) for r in ring.audit()]
        assert seen == [("mcp.render_profile", "u1", issued.key.key_id, 403),
                        ("mcp.recall_facts", "u1", issued.key.key_id, 200)]  # fmt: skip
        with pytest.raises(MemkgError) as other:
            subject_from(engine, db, "u2", [], issued.token)
        assert other.value.code == "access.user"


@pytest.mark.postgres
def test_a_keyed_session_finds_its_key_in_the_postgresql_schema(
    postgres_dsn: str, pg_schema: str
) -> None:
    from memkg.access import Keyring
    from memkg.access.postgres import PostgresAccessStore
    from memkg.service.mcp import subject_from

    config = EngineConfig(pg_schema=pg_schema)
    keys = PostgresAccessStore(postgres_dsn, schema=pg_schema)
    with Engine.connect(postgres_dsn, config=config) as engine:
        issued = Keyring(keys, engine.clock).create("agent", ["read"], ["travel"], user_id="u7")
        subject, audit = subject_from(engine, postgres_dsn, None, [], issued.token, store=keys)
        assert subject.user_id == "u7" and audit is not None
        audit(subject, "recall_facts", "travel", None, 200, None)
    assert [r.action for r in Keyring(keys, engine.clock).audit()] == ["mcp.recall_facts"]
    keys.close()


def test_recall_facts_hands_the_model_a_page(engine: Engine) -> None:
    engine.ingest_many([obs(key=k, value=v) for k, v in (
        ("seat.preference", "aisle"), ("cabin.class", "business"),
        ("airline.preferred", "airline:MU"))])  # fmt: skip
    server = build_server(engine, local_subject("u1"))

    async def calls() -> None:
        first = await server.call_tool("recall_facts", {"limit": 2})
        page = first.structured_content
        assert page is not None and len(page["facts"]) == 2
        assert isinstance(page["next"], str)
        rest = await server.call_tool("recall_facts", {"limit": 2, "after": page["next"]})
        more = rest.structured_content
        assert more is not None and len(more["facts"]) == 1 and more["next"] is None

    anyio.run(calls)


def test_an_audit_that_cannot_be_written_withholds_reads_and_marks_changes(
    tmp_path: Path,
) -> None:
    """As over HTTP: a read shows nothing unaudited; a change, made by then, is answered with
    ``memkg/audit: unrecorded`` in its ``_meta``, so the agent does not make it twice."""
    from mcp.server.mcpserver import Context

    from memkg.access import Keyring, MemoryAccessStore
    from memkg.errors import StoreError
    from memkg.service.mcp import audit_to, keyed_subject

    class Unwritable(MemoryAccessStore):
        def record(self, records: Any) -> None:
            raise StoreError("access store: the disk is full", code="store.full")

    with Engine.open(tmp_path / "m.db") as engine:
        ring = Keyring(Unwritable(), engine.clock)
        issued = ring.create("agent", ["read", "write"], ["travel"], user_id="u1")
        subject = keyed_subject(ring.authenticate(issued.token), None)
        server = build_server(engine, subject, audit=audit_to(ring, engine))

        async def calls() -> tuple[Any, Any]:
            sent = {k: v for k, v in obs().items() if k != "user_id"}
            stored = await server.call_tool("remember", sent, Context(mcp_server=server))
            read = await server.call_tool("recall_facts", {}, Context(mcp_server=server))
            return stored, read

        stored, read = anyio.run(calls)
        assert not stored.is_error and stored.meta == {"memkg/audit": "unrecorded"}
        assert [f.value for f in engine.facts("u1")] == ["airline:MU"]
        assert error_of(read)["error"] == "store.full" and "airline" not in str(read.content)


def test_recall_serves_one_domain_the_session_may_read_and_is_audited(tmp_path: Path) -> None:
    from mcp.server.mcpserver import Context

    from memkg.access import Keyring
    from memkg.access.sqlite import SqliteAccessStore
    from memkg.service.mcp import subject_from

    db = tmp_path / "m.db"
    with Engine.open(db) as engine:
        engine.ingest(obs(user_id="u1"))
        engine.ingest(obs(user_id="u1", domain="health", key="child.age", value=3,
                          source="profile", **CONSENTED))  # fmt: skip
        ring = Keyring(SqliteAccessStore(db), engine.clock)
        issued = ring.create("agent", ["read"], ["travel"], user_id="u1")
        subject, audit = subject_from(engine, db, None, [], issued.token)
        server = build_server(engine, subject, audit=audit)

        async def calls() -> tuple[Any, Any]:
            mine = await server.call_tool("recall", {"query": "airline", "domain": "travel"},
                                          Context(mcp_server=server))  # fmt: skip
            other = await server.call_tool("recall", {"query": "child", "domain": "health"},
                                           Context(mcp_server=server))  # fmt: skip
            return mine, other

        mine, other = anyio.run(calls)
        found = mine.structured_content
        assert [c["text"].split(":")[0] for c in found["candidates"]] == ["airline preferred"]
        assert found["trace_id"] and error_of(other)["error"].startswith("access.")
        seen = sorted((r.action, r.domain, r.status) for r in ring.audit())
        assert seen == [("mcp.recall", "health", 403), ("mcp.recall", "travel", 200)]
