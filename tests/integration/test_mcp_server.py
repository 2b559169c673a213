"""The MCP server, started as an agent would: a subprocess over stdio, driven by the SDK."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

anyio = pytest.importorskip("anyio")
mcp = pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

from memkg import Engine  # noqa: E402
from support.observations import obs  # noqa: E402

ENGINE = Path(__file__).resolve().parents[2] / "engine"
TOOLS = ["claims", "decide", "explain_decision", "forget", "list_domains", "list_keys",
         "memory_status", "recall", "recall_facts", "remember", "render_profile",
         "save_memory_note",
         "set_memory", "trace"]  # fmt: skip


def text_of(result: CallToolResult) -> Any:
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def without_user(observation: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in observation.items() if k != "user_id"}


async def agent_session(*db: str) -> list[str]:
    traced: list[str] = []
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memkg.service.mcp", "--db", *db, "--user", "u1"],
        env={"PYTHONPATH": str(ENGINE)},
    )  # fmt: skip
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        assert sorted(t.name for t in listed) == TOOLS
        remember = next(t for t in listed if t.name == "remember")
        required = set(remember.input_schema["required"])
        assert {"domain", "key", "value", "source"} <= required
        assert all("user_id" not in t.input_schema.get("properties", {}) for t in listed)
        assert "fact_id" in (remember.output_schema or {})["properties"]

        stored = await session.call_tool("remember", without_user(obs()))
        assert not stored.is_error and stored.structured_content is not None
        assert stored.structured_content["status"] == "active"
        fact_id = stored.structured_content["fact_id"]

        refused = await session.call_tool(
            "remember", without_user(obs(key="seat.preference", value="sideways"))
        )
        assert refused.is_error
        report = text_of(refused)
        assert report["error"] == "validation.failed"
        assert [p["code"] for p in report["problems"]] == ["schema.enum"]

        recalled = await session.call_tool("recall_facts", {"domain": "travel"})
        assert recalled.structured_content is not None
        assert [f["id"] for f in recalled.structured_content["facts"]] == [fact_id]

        note = {"domain": "travel", "note": "Call me at +1 415 555 0100"}
        leak = await session.call_tool("save_memory_note", note)
        assert leak.is_error and text_of(leak)["error"] == "note.refused"
        profile = await session.call_tool("render_profile", {"domain": "travel"})
        assert profile.structured_content is not None
        assert "airline:MU" in profile.structured_content["text"]
        traced.append(profile.structured_content["trace_id"])
        shown = await session.call_tool("trace", {"trace_id": traced[0]})
        assert not shown.is_error and shown.structured_content is not None
        assert shown.structured_content["operation"] == "render_profile"
        assert {i["ref"] for i in shown.structured_content["items"] if i["used"]} == {
            i["ref"] for i in profile.structured_content["included"]}  # fmt: skip
        unknown_trace = await session.call_tool("trace", {"trace_id": "trc_nope"})
        assert unknown_trace.is_error and text_of(unknown_trace)["error"] == "trace.not_found"

        made = await session.call_tool("decide", {"domain": "travel"})
        assert made.structured_content is not None
        scoped = await session.call_tool(
            "decide", {"domain": "travel", "session_id": "s1", "turn": "t1"}
        )
        assert not scoped.is_error and scoped.structured_content is not None
        decision_id = made.structured_content["decision_id"]
        traced.append(made.structured_content["trace_id"])
        why = await session.call_tool("explain_decision", {"decision_id": decision_id})
        [block] = why.content
        assert not why.is_error and isinstance(block, TextContent) and "Decision" in block.text

        unknown = await session.call_tool("forget", {"fact_id": "fact_nope", "reason": "asked"})
        assert unknown.is_error and text_of(unknown)["error"] == "fact.not_found"
        forgotten = await session.call_tool("forget", {"fact_id": fact_id, "reason": "asked"})
        assert not forgotten.is_error and text_of(forgotten)["status"] == "retracted"
    return traced


def test_an_agent_remembers_recalls_and_decides_over_stdio(tmp_path: Path) -> None:
    traced = anyio.run(agent_session, str(tmp_path / "memkg.db"))
    with Engine.open(tmp_path / "memkg.db") as engine:  # what was injected, found by its id
        profile, decided = (engine.trace(t) for t in traced)
    assert (profile.operation, decided.operation) == ("render_profile", "decide")
    assert profile.user_id == decided.user_id == "u1" and profile.counts["used"] >= 1


@pytest.mark.postgres
def test_the_same_session_runs_on_postgresql(postgres_dsn: str, pg_schema: str) -> None:
    anyio.run(agent_session, postgres_dsn, "--pg-schema", pg_schema)
    with Engine.connect(postgres_dsn, schema=pg_schema) as engine:
        assert [e.type.value for e in engine.read_events("u1")][-1] == "fact.retracted"
