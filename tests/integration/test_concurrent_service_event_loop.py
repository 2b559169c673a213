"""An explanation reads the access audit on the server's event loop: while that read waits
(a PostgreSQL audit table under load, a SQLite access store whose lock an audit write holds
while it waits for the file), no other request of the server is answered, not even
``/v1/health``.

``Routes.explain`` calls ``Routes._grants_behind`` (``Keyring.audit``: a store query) directly
in the async handler, not in the threadpool as every other store call of the service is
(``run_in_threadpool``). The read is held at a known point (the access store's ``records``
waits until released) and the test checks what got through meanwhile: an order of events, as
in ``test_http_concurrency.py``, not a wall-clock bound.
"""

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

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from memkg import Engine, FrozenClock  # noqa: E402
from support.observations import obs  # noqa: E402
from support.service import keyed_app, token  # noqa: E402


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


def _until(condition: Callable[[], object], what: str) -> bool:
    for _ in range(1_000):  # a bound on polls (about 10 s), not a timing assertion
        if condition():
            return True
        time.sleep(0.01)
    return False


def _request(base: str, key: str, method: str, path: str) -> tuple[int, Any]:
    sent = urllib.request.Request(base + path, method=method,
                                  headers={"authorization": f"Bearer {key}"})  # fmt: skip
    try:
        with urllib.request.urlopen(sent, timeout=60) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"null")


class _HeldAuditReads:
    """An access store whose audit reads (``records``) wait until ``released`` is set
    (counted in ``held``); everything else goes to ``store`` at once."""

    def __init__(self, store: Any) -> None:
        self.store, self.released, self.held = store, threading.Event(), 0

    def records(self, **filters: Any) -> Any:
        self.held += 1
        self.released.wait(60)
        return self.store.records(**filters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_an_explanation_waiting_on_the_audit_holds_up_no_other_request(
    clock: FrozenClock,
) -> None:
    engine = Engine(clock=clock)
    engine.ingest(obs(domain="health", key="child.age", value=4, source="profile"))
    decision = engine.decide("u1", "health", {"symptom": "fever"}).decision_id
    app, keyring = keyed_app(engine)
    key = token(keyring)
    held = _HeldAuditReads(keyring.store)
    keyring.store = held
    answers: dict[str, tuple[int, Any]] = {}
    done: list[str] = []

    def run(name: str, path: str) -> None:
        answers[name] = _request(base, key, "GET", path)
        done.append(name)

    with _serve(app) as base:
        explain = threading.Thread(target=run, args=("explain", f"/v1/decisions/{decision}"),
                                   daemon=True)  # fmt: skip
        explain.start()
        assert _until(lambda: held.held >= 1, "the explanation's audit read held")
        health = threading.Thread(target=run, args=("health", "/v1/health"), daemon=True)
        facts = threading.Thread(target=run, args=("facts", "/v1/users/u1/facts"), daemon=True)
        health.start()
        facts.start()
        # were the audit read on a worker thread, both would answer while it waits
        answered_meanwhile = _until(lambda: len(done) == 2, "the other requests answered")
        seen_meanwhile = sorted(done)
        held.released.set()
        for thread in (explain, health, facts):
            thread.join(timeout=60)
    assert answers["explain"][0] == 200
    assert answers["health"][0] == answers["facts"][0] == 200
    assert answered_meanwhile, f"answered while the explanation's audit read waited: " \
        f"{seen_meanwhile} (expected facts and health)"  # fmt: skip
