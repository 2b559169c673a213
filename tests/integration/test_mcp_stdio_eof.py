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


def test_a_line_the_protocol_cannot_read_is_answered_and_stores_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "memkg.db")
    deep = "[" * 5000 + "]" * 5000
    nested = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
              '"remember", "arguments": {"domain": "travel", "key": "cabin.class", '
              f'"source": "dialogue", "value": {deep}}}}}}}')  # fmt: skip
    surrogate = json.dumps(call(2, "remember", {"domain": "travel", "key": "cabin.class",
                                                "value": "first", "source": "dialogue",
                                                "context": {"trip_type": "\ud800"}}))  # fmt: skip
    named = '{"jsonrpc": "2.0", "method": "tools/call", "params": {"id": 9}, "id": "s-3", x}'
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), nested, surrogate,
             "not json at all", named, json.dumps(call(4, "recall_facts", {}))]  # fmt: skip
    done = memkg("mcp", "--user", "eof-user", "--db", db, stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id, key=str) == sorted([0, 1, 2, None, "s-3", 4], key=str)
    for request_id in (1, 2, None, "s-3"):
        error = by_id[request_id]["error"]
        assert error["code"] == -32700 and error["message"], error
    assert "nested" in by_id[1]["error"]["message"] or "recursion" in by_id[1]["error"]["message"]
    assert by_id[4]["result"]["structuredContent"]["facts"] == []


def test_json_that_is_no_message_is_answered_under_its_id(tmp_path: Path) -> None:
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED),
             json.dumps({"jsonrpc": "2.0", "id": 7, "method": 12}),
             json.dumps(call(8, "memory_status", {}))]  # fmt: skip
    done = memkg("mcp", "--user", "eof-user", "--db", str(tmp_path / "memkg.db"),
                 stdin="\n".join(lines) + "\n")  # fmt: skip
    by_id = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(by_id) == [0, 7, 8]
    assert by_id[7]["error"]["code"] == -32600 and "result" in by_id[8]


def test_a_line_readers_would_read_two_ways_is_refused_and_stores_nothing(
    tmp_path: Path,
) -> None:
    """A key given twice: the SDK's parser keeps the last, a gateway in front may check the
    first. Refused under its id, as over HTTP; the next line is served."""
    db = str(tmp_path / "memkg.db")
    twice = ('{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": '
             '"remember", "arguments": {"domain": "travel", "key": "cabin.class", '
             '"value": "first", "value": "economy", "source": "dialogue"}}}')  # fmt: skip
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), twice,
             json.dumps(call(4, "recall_facts", {}))]  # fmt: skip
    done = memkg("mcp", "--user", "eof-user", "--db", db, stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    by_id = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(by_id) == [0, 3, 4]
    assert by_id[3]["error"]["code"] == -32600 and "twice" in by_id[3]["error"]["message"]
    assert by_id[4]["result"]["structuredContent"]["facts"] == []


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc")
def test_while_serving_stdin_is_the_null_device_to_anything_else(tmp_path: Path) -> None:
    """A handler or a child process reading fd 0 reads nothing of the protocol: the wire is
    read from a private descriptor, and fd 0 points at the null device until the end."""
    with subprocess.Popen(
        [sys.executable, "-m", "memkg", "mcp", "--user", "u1", "--db", str(tmp_path / "m.db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={"PYTHONPATH": str(ENGINE), "PATH": ""},
    ) as served:  # fmt: skip
        assert served.stdin is not None and served.stdout is not None
        served.stdin.write(json.dumps(INITIALIZE) + "\n")
        served.stdin.flush()
        assert json.loads(served.stdout.readline())["id"] == 0  # serving now
        assert Path(f"/proc/{served.pid}/fd/0").resolve() == Path("/dev/null")
        served.stdin.write(json.dumps(INITIALIZED) + "\n")
        served.stdin.write(json.dumps(call(1, "list_domains", {})) + "\n")
        served.stdin.close()
        assert json.loads(served.stdout.readline())["id"] == 1
        assert served.wait(timeout=60) == 0
