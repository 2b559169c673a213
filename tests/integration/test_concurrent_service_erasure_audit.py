"""An erasure that runs while another request about the same person is in flight leaves that
person's id in the clear in the access audit.

README ("Access audit"): erasing a user replaces their id in the audit by an HMAC. The
dispatcher writes a request's audit record after its engine call (``Dispatcher.endpoint`` →
``_record``), and the MCP server after its tool call (``MemkgMCP.call_tool`` → ``_record``);
an erasure served meanwhile pseudonymises only the records already written. So a read or a
write of the person that ran its engine call before the erasure, and writes its record after
the erasure answered, names the erased person in the clear: ``GET /v1/access/audit?user=ID``
finds them after their erasure.

The race is made certain, not timed: the in-flight request's record waits (``Keyring.record``
held) until the erasure has answered. The server is set up as ``memkg serve`` sets it up: the
keys and the audit in the memory's SQLite file (``SqliteAccessStore``), which the erasure
rewrites in its own transaction.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("mcp")

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memkg import Engine, FrozenClock  # noqa: E402
from memkg.access import AccessRecord, Keyring  # noqa: E402
from memkg.access.sqlite import SqliteAccessStore  # noqa: E402
from memkg.service.auth import RateLimiter  # noqa: E402
from memkg.service.http import create_app  # noqa: E402
from memkg.service.settings import ServiceSettings  # noqa: E402
from support.observations import T0, obs  # noqa: E402

PERSON = "traveller-7f3k"


@contextmanager
def _serve(app: Any) -> Iterator[str]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    _until(lambda: server.started, "the server started")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def _until(condition: Callable[[], object], what: str) -> None:
    for _ in range(1_000):  # a bound on polls (about 10 s), not a timing assertion
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def _request(base: str, key: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    sent = urllib.request.Request(
        base + path, data=data, method=method,
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(sent, timeout=60) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"null")


class _HeldRecords:
    """``Keyring.record`` whose records of ``action`` wait until ``released`` is set (counted
    in ``held``); the rest, and these once released, go to the store as before."""

    def __init__(self, keyring: Keyring, action: str) -> None:
        self.record, self.action = keyring.record, action
        self.released, self.held = threading.Event(), 0

    def __call__(self, records: Sequence[AccessRecord]) -> None:
        if any(r.action == self.action for r in records):
            self.held += 1
            self.released.wait(60)
        self.record(records)


@contextmanager
def _served_as_memkg_serve(tmp_path: Path) -> Iterator[tuple[Engine, Keyring, Any]]:
    clock = FrozenClock(T0)
    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        keyring = Keyring(SqliteAccessStore(tmp_path / "m.db"), engine.clock)
        settings = ServiceSettings(rate_limit=0)
        app = create_app(engine, keyring=keyring, settings=settings,
                         limiter=RateLimiter(0))  # fmt: skip
        try:
            yield engine, keyring, app
        finally:
            keyring.store.close()


def _in_flight_then_erased(
    tmp_path: Path, action: str, method: str, path: str, body: Any = None
) -> tuple[int, int, list[tuple[str, str | None]]]:
    """A request about PERSON whose audit record waits while PERSON is erased: the request's
    status, the erasure's, and the audit records that name PERSON once both answered."""
    with _served_as_memkg_serve(tmp_path) as (engine, keyring, app):
        engine.ingest(obs(user_id=PERSON))
        agent = keyring.create("agent", ["read", "write"], ["*"]).token
        officer = keyring.create("officer", ["erase"], ["*"]).token
        held = _HeldRecords(keyring, action)
        keyring.record = held  # type: ignore[method-assign]
        answers: dict[str, tuple[int, Any]] = {}
        with _serve(app) as base:
            first = threading.Thread(target=lambda: answers.__setitem__(
                "request", _request(base, agent, method, path, body)), daemon=True)  # fmt: skip
            first.start()
            _until(lambda: held.held >= 1, "the request's engine call done, its record held")
            answers["erase"] = _request(base, officer, "DELETE", f"/v1/users/{PERSON}")
            held.released.set()
            first.join(timeout=60)
            assert not first.is_alive(), "the request never answered"
        named = [(r.action, r.subject) for r in keyring.audit(subject=PERSON)]
        return answers["request"][0], answers["erase"][0], named


def test_a_read_in_flight_during_an_erasure_leaves_the_erased_id_in_the_audit(
    tmp_path: Path,
) -> None:
    status, erased, named = _in_flight_then_erased(
        tmp_path, "facts", "GET", f"/v1/users/{PERSON}/facts")  # fmt: skip
    assert (status, erased) == (200, 200)
    # after the erasure answered, nothing in the audit may name the person in the clear
    assert named == [], f"the erased person is named in the audit after their erasure: {named}"


def test_a_write_in_flight_during_an_erasure_leaves_the_erased_id_in_the_audit(
    tmp_path: Path,
) -> None:
    status, erased, named = _in_flight_then_erased(
        tmp_path, "ingest", "POST", "/v1/observations", obs(user_id=PERSON, value="airline:CA")
    )
    assert (status, erased) == (201, 200)
    assert named == [], f"the erased person is named in the audit after their erasure: {named}"


def test_an_mcp_call_in_flight_during_an_erasure_leaves_the_erased_id_in_the_audit(
    tmp_path: Path,
) -> None:
    import anyio

    with _served_as_memkg_serve(tmp_path) as (engine, keyring, app):
        engine.ingest(obs(user_id=PERSON))
        agent = keyring.create("agent", ["read", "write"], ["travel"], user_id=PERSON).token
        officer = keyring.create("officer", ["erase"], ["*"]).token
        held = _HeldRecords(keyring, "mcp.recall_facts")
        keyring.record = held  # type: ignore[method-assign]

        async def recall_facts(url: str) -> Any:
            async with (
                httpx2.AsyncClient(
                    headers={"authorization": f"Bearer {agent}"}, timeout=60
                ) as http,  # fmt: skip
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool("recall_facts", {})

        result: list[Any] = []
        with _serve(app) as base:
            mcp = threading.Thread(target=lambda: result.append(
                anyio.run(recall_facts, base + "/mcp")), daemon=True)  # fmt: skip
            mcp.start()
            _until(lambda: held.held >= 1, "the tool call done, its record held")
            erased = _request(base, officer, "DELETE", f"/v1/users/{PERSON}")
            held.released.set()
            mcp.join(timeout=60)
            assert not mcp.is_alive(), "the tool call never answered"
        named = [(r.action, r.subject) for r in keyring.audit(subject=PERSON)]
    assert erased[0] == 200 and result and not result[0].is_error
    assert named == [], f"the erased person is named in the audit after their erasure: {named}"
