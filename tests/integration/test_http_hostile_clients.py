"""What a page of another origin, or a client that never finishes its request, can make the
service do: refused with memkg's JSON, nothing stored or changed."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from memkg import Engine
from memkg.service.http import create_app, http_server
from memkg.service.settings import ServiceSettings
from support.observations import obs
from support.service import client, keyed_app, token

EVIL = "https://evil.example"


def _pending(engine: Engine, user: str) -> str:
    result = engine.ingest(obs(user_id=user, domain="health", key="child.count", value=1,
                               provenance={"consent_granted": True, "consent_version": "v1",
                                           "purpose": "care"}))  # fmt: skip
    assert result.status == "pending_confirmation"
    return result.fact_id


def test_a_page_of_another_origin_cannot_change_memory_without_keys(engine: Engine) -> None:
    """Without keys (--no-auth, loopback) any page the browser opens can reach the service:
    a bodiless POST carries no Content-Type, so only its Origin tells it apart."""
    app = create_app(engine, settings=ServiceSettings(open_access=True, rate_limit=0))
    engine.ingest(obs(user_id="ren"))
    fact = _pending(engine, "ren")
    browser = client(app, None, headers={"origin": EVIL})
    off = browser.post("/v1/users/ren/memory/disable")
    assert off.status_code == 403 and off.json()["error"] == "request.origin"
    assert engine.memory_state("ren").enabled
    confirm = browser.post(f"/v1/users/ren/facts/{fact}/confirm")
    assert confirm.status_code == 403
    assert next(f for f in engine.facts("ren") if f.id == fact).status == "pending_confirmation"
    for origin in ("null", "http://localhost:3000", "http://127.0.0.1"):
        sent = client(app, None, headers={"origin": origin}).post("/v1/users/ren/memory/disable")
        assert sent.status_code == 403, origin
    assert engine.memory_state("ren").enabled
    assert browser.get("/v1/users/ren/facts").status_code == 403  # nor read it

    own = client(app, None, headers={"origin": "http://localhost"})  # the service's own page
    assert own.post(f"/v1/users/ren/facts/{fact}/confirm").status_code == 200
    assert client(app, None).get("/v1/users/ren/facts").status_code == 200  # no Origin: no page


def test_an_origin_given_with_cors_origin_is_served(engine: Engine) -> None:
    app, keyring = keyed_app(engine, cors_origins=("https://console.example",))
    key = token(keyring)
    console = client(app, key, headers={"origin": "https://console.example"})
    answer = console.post("/v1/observations", json=obs(user_id="ada"))
    assert answer.status_code == 201
    assert answer.headers["access-control-allow-origin"] == "https://console.example"
    foreign = client(app, key, headers={"origin": EVIL}).post("/v1/observations",
                                                              json=obs(user_id="eve"))  # fmt: skip
    assert foreign.status_code == 403 and engine.facts("eve") == []


def test_any_origin_with_a_star_and_the_service_behind_a_proxy(engine: Engine) -> None:
    """``--cors-origin '*'`` allows any page, as its CORS headers say; behind a proxy that
    sends ``Host`` as the address it forwards to, a page under a name given with
    ``--allowed-host`` is the service's own, default ports left out on either side."""
    app, keyring = keyed_app(engine, cors_origins=("*",))
    key = token(keyring)
    anyone = client(app, key, headers={"origin": EVIL}).post("/v1/observations",
                                                             json=obs(user_id="ada"))  # fmt: skip
    assert anyone.status_code == 201
    app, keyring = keyed_app(engine, allowed_hosts=("memkg.example.com",))
    key = token(keyring)
    for host, origin, status in [
        ("127.0.0.1:8080", "https://memkg.example.com", 201),  # Host rewritten by the proxy
        ("memkg.example.com:443", "https://memkg.example.com", 201),
        ("localhost:80", "http://localhost", 201),
        ("localhost:8080", "http://localhost:3000", 403),  # another program on this machine
        ("127.0.0.1:8080", EVIL, 403),
    ]:
        sent = client(app, key, headers={"origin": origin, "host": host}).post(
            "/v1/observations", json=obs(user_id="bob"))  # fmt: skip
        assert sent.status_code == status, (host, origin, sent.json())


def _post_stalling(app: Any, first: bytes) -> list[dict[str, Any]]:
    """POST /v1/observations whose body stops after ``first``, as a client that never sends
    the rest: the app's answer."""
    sent: list[dict[str, Any]] = []
    never = asyncio.Event()
    chunks = [{"type": "http.request", "body": first, "more_body": True}]

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop()
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/observations", "raw_path": b"/v1/observations",
        "root_path": "", "query_string": b"", "client": ("127.0.0.1", 1),
        "server": ("localhost", 80),
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"),
                    (b"content-length", b"500")],
    }  # fmt: skip
    try:  # a guard against a hang, far beyond the deadline
        asyncio.run(asyncio.wait_for(app(scope, receive, send), 60))
    except TimeoutError:
        pytest.fail("the app is still waiting for the body")
    return sent


def test_a_body_that_never_finishes_is_refused(engine: Engine) -> None:
    app = create_app(engine, settings=ServiceSettings(open_access=True, body_timeout=0.05))
    sent = _post_stalling(app, b'{"user_id": "slow", ')
    [start] = [m for m in sent if m["type"] == "http.response.start"]
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert start["status"] == 408, body
    assert b'"request.timeout"' in body
    assert engine.facts("slow") == []


@contextmanager
def _serving(app: Any, settings: ServiceSettings) -> Iterator[tuple[str, int]]:
    """``app`` served as ``memkg serve`` serves it, on a free loopback port."""
    server = http_server(app, settings)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            thread.join(0.01)
        yield listening.getsockname()
    finally:
        server.should_exit = True
        thread.join()
        listening.close()


def _closed_while_trickling(conn: socket.socket, limit: int = 2_000) -> bool:
    """Send a header line a byte at a time until the server closes the connection."""
    conn.settimeout(0.05)
    for byte in (b"X-Pad: " + b"a" * limit)[:limit]:
        try:
            conn.sendall(bytes([byte]))
            if conn.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:  # reset by the server
            return True
    return False


def test_headers_that_never_finish_end_the_connection(engine: Engine) -> None:
    """A client that opens connections and never finishes a request's headers (slowloris)
    has each closed once ``header_timeout`` passed, on the first request or a later one."""
    app = create_app(engine, settings=ServiceSettings(open_access=True))
    settings = ServiceSettings(open_access=True, header_timeout=0.2)
    with _serving(app, settings) as (host, port):
        with socket.create_connection((host, port)) as conn:
            conn.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n")
            assert _closed_while_trickling(conn)
        with socket.create_connection((host, port)) as conn:
            conn.settimeout(60)  # a guard against a hang, far beyond the deadline
            conn.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert conn.recv(65536).startswith(b"HTTP/1.1 200")
            conn.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n")
            assert _closed_while_trickling(conn)


def test_mcp_bodies_are_held_to_the_same_limits(engine: Engine) -> None:
    pytest.importorskip("mcp")
    app, keyring = keyed_app(engine, max_body_bytes=2_000)
    key = token(keyring, ("read",), ("*",), user_id="ada")
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"accept": "application/json, text/event-stream"}
    with client(app, key, headers=accept) as mcp:
        small = mcp.post("/mcp", json=listing)
        assert small.status_code == 200, small.text
        big = mcp.post("/mcp", json={**listing, "params": {"_meta": {"pad": "x" * 50_000}}})
        assert big.status_code == 413 and big.json()["error"] == "request.too_large"
        chunks = (b"x" * 1_000 for _ in range(50))  # streamed: no Content-Length to trust
        streamed = mcp.post("/mcp", content=chunks, headers={"content-type": "application/json"})
        assert streamed.status_code == 413 and streamed.json()["error"] == "request.too_large"
