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

import threading
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from memkg import Engine, FrozenClock  # noqa: E402
from support.live_service import polled, request, serve  # noqa: E402
from support.observations import obs  # noqa: E402
from support.service import keyed_app, token  # noqa: E402


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
        answers[name] = request(base, key, "GET", path)
        done.append(name)

    with serve(app) as base:
        explain = threading.Thread(target=run, args=("explain", f"/v1/decisions/{decision}"),
                                   daemon=True)  # fmt: skip
        explain.start()
        assert polled(lambda: held.held >= 1)
        health = threading.Thread(target=run, args=("health", "/v1/health"), daemon=True)
        facts = threading.Thread(target=run, args=("facts", "/v1/users/u1/facts"), daemon=True)
        health.start()
        facts.start()
        # were the audit read on a worker thread, both would answer while it waits
        answered_meanwhile = polled(lambda: len(done) == 2)
        seen_meanwhile = sorted(done)
        held.released.set()
        for thread in (explain, health, facts):
            thread.join(timeout=60)
    assert answers["explain"][0] == 200
    assert answers["health"][0] == answers["facts"][0] == 200
    assert answered_meanwhile, f"answered while the explanation's audit read waited: " \
        f"{seen_meanwhile} (expected facts and health)"  # fmt: skip
