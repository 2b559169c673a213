"""MCP over stdio, a client that sends its requests and closes its end at once: every request
read before end of input is answered before the process exits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

ENGINE = Path(__file__).resolve().parents[2] / "engine"

INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "pipe", "version": "0"}}}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}  # fmt: skip


def memkg(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memkg", *argv], input=stdin, capture_output=True, text=True,
        timeout=120, env={"PYTHONPATH": str(ENGINE), "PATH": ""},
    )  # fmt: skip


def test_requests_piped_then_closed_are_all_answered(tmp_path: Path) -> None:
    db = str(tmp_path / "memkg.db")
    remember = {"domain": "travel", "key": "cabin.class", "value": "first", "source": "dialogue"}
    messages = [INITIALIZE, INITIALIZED, call(1, "list_domains", {}),
                call(2, "remember", remember), call(3, "recall_facts", {}),
                call(4, "memory_status", {}), call(5, "no_such_tool", {})]  # fmt: skip
    done = memkg("mcp", "--user", "eof-user", "--db", db,
                 stdin="".join(json.dumps(m) + "\n" for m in messages))  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [0, 1, 2, 3, 4, 5]
    stored = answers[2]["result"]
    assert not stored.get("isError") and stored["structuredContent"]["status"] == "active"
    facts = json.loads(memkg("--db", db, "facts", "eof-user").stdout)["facts"]
    assert [f["value"] for f in facts] == ["first"]
