"""The HTTP service on a real socket, for tests that drive it from threads: ``serve`` (uvicorn
with its lifespan, so ``/mcp`` runs too), ``request`` (JSON over ``urllib``), and ``until`` /
``polled`` (a bound on polls, not a timing assertion)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def polled(condition: Callable[[], object]) -> bool:
    """Whether ``condition`` came true within 1,000 polls (about 10 s)."""
    for _ in range(1_000):
        if condition():
            return True
        time.sleep(0.01)
    return False


def until(condition: Callable[[], object], what: str) -> None:
    """Wait for ``condition`` (``polled``); fail the test saying ``what`` never happened."""
    if not polled(condition):
        raise AssertionError(f"never happened: {what}")


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn, lifespan on, on a loopback socket bound before it starts;
    yields the base URL."""
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    until(lambda: server.started, "the server started")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def request(base: str, key: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """The status and JSON answer of one request sent with ``key`` (errors are answers too)."""
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
