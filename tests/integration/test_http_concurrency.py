"""The service runs engine calls concurrently: a slow call holds up no other request, and
decisions made at once share their log's commits, each answered only once its row is durable.

Each test holds one call at a known point (an embeddings answer kept back, the decision log's
commit, the audit's write) and checks what else got through meanwhile: an order of events, not
a wall-clock bound.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("mcp")

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memkg import EmbeddingConfig, Engine, EngineConfig, FrozenClock  # noqa: E402
from memkg.access import AccessRecord  # noqa: E402
from memkg.decisions import SqliteDecisionLog  # noqa: E402
from support.live_service import request, serve, until  # noqa: E402
from support.observations import obs  # noqa: E402
from support.openai_server import OpenAIServer  # noqa: E402
from support.service import keyed_app, token  # noqa: E402


class _Calls:
    """Requests run on threads of their own; ``done`` lists their names as they answer."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self.answers: dict[str, tuple[int, Any]] = {}
        self.threads: list[threading.Thread] = []

    def start(self, name: str, call: Callable[[], tuple[int, Any]]) -> None:
        def run() -> None:
            self.answers[name] = call()
            self.done.append(name)

        thread = threading.Thread(target=run, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in self.threads), "a request never answered"


def test_a_recall_waiting_on_its_embeddings_endpoint_holds_up_no_other_request(
    tmp_path: Path, clock: FrozenClock
) -> None:
    with OpenAIServer() as model:
        embedding = EmbeddingConfig(model="test-embed", base_url=model.base_url, api_key="k",
                                    max_retries=0, timeout_s=60)  # fmt: skip
        config = EngineConfig(embedding=embedding)
        with Engine.open(tmp_path / "m.db", clock=clock, config=config) as engine:
            engine.ingest(obs())  # u1 prefers an airline: a memory to embed and rank
            engine.ingest(obs(user_id="u2", domain="health", key="child.age", value=4,
                              source="profile"))  # fmt: skip
            app, keyring = keyed_app(engine)
            key = token(keyring)
            released = model.hold()
            calls = _Calls()
            with serve(app) as base:
                calls.start("recall", lambda: request(
                    base, key, "POST", "/v1/users/u1/recall",
                    {"query": "which airline", "domain": "travel"}))  # fmt: skip
                until(lambda: model.held >= 1, "the recall's embeddings request held")
                calls.start("decide", lambda: request(
                    base, key, "POST", "/v1/users/u2/decisions",
                    {"domain": "health", "context": {"symptom": "fever"}}))  # fmt: skip
                calls.start("ready", lambda: request(base, key, "GET", "/v1/ready"))
                calls.start("facts", lambda: request(base, key, "GET", "/v1/users/u2/facts"))
                # the others answer while the recall still waits (were calls serialised, they
                # would wait behind it, and the hold would be let go below with none answered)
                until(lambda: len(calls.done) == 3, "the other requests answered")
                released.set()
                calls.join()
    assert calls.done[-1] == "recall"
    assert calls.answers["decide"][0] == 201
    assert calls.answers["ready"][0] == 200
    assert [f["key"] for f in calls.answers["facts"][1]["facts"]] == ["child.age"]
    status, found = calls.answers["recall"]
    assert status == 200 and found["injected"], found


def test_decisions_made_at_once_share_a_commit_each_answered_once_durable(
    tmp_path: Path, clock: FrozenClock
) -> None:
    users = [f"u{n}" for n in range(6)]
    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        for user in users:
            engine.ingest(obs(user_id=user, domain="health", key="child.age", value=4,
                              source="profile"))  # fmt: skip
        engine.decide(users[0], "health", {"symptom": "fever"})  # the rules read in
        log = engine.decision_log
        assert isinstance(log, SqliteDecisionLog)
        app, keyring = keyed_app(engine)
        key = token(keyring)
        calls = _Calls()
        with serve(app) as base:
            commits = log.commits
            # the log's connection held, as by a commit in progress: the decisions queue
            with log._lock:
                for user in users:
                    calls.start(user, lambda u=user: request(
                        base, key, "POST", f"/v1/users/{u}/decisions",
                        {"domain": "health", "context": {"symptom": "fever"}}))  # fmt: skip
                until(lambda: len(log._pending) == len(users), "every decision queued")
                assert calls.done == []  # none acknowledged before its row is committed
            calls.join()
            assert log.commits == commits + 1
    assert sorted(calls.done) == users
    with sqlite3.connect(tmp_path / "m.db") as other:
        logged = {row[0] for row in other.execute("SELECT decision_id FROM decisions")}
    answered = {answer[1]["decision_id"] for answer in calls.answers.values()}
    assert {answer[0] for answer in calls.answers.values()} == {201}
    assert answered <= logged and len(answered) == len(users)


class _HeldAudit:
    """An access store whose records of ``action`` wait until ``released`` is set (counted
    in ``held``); the rest are written at once."""

    def __init__(self, store: Any, action: str) -> None:
        self.store, self.action, self.released, self.held = store, action, threading.Event(), 0

    def record(self, records: Sequence[AccessRecord]) -> None:
        if any(r.action == self.action for r in records):
            self.held += 1
            self.released.wait()
        self.store.record(records)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_an_mcp_call_whose_audit_write_waits_holds_up_no_other_request(
    tmp_path: Path, clock: FrozenClock
) -> None:
    import anyio

    with Engine.open(tmp_path / "m.db", clock=clock) as engine:
        app, keyring = keyed_app(engine)
        agent = keyring.create("u1's agent", ["read", "write"], ["travel"], user_id="u1")
        admin = token(keyring)
        held = _HeldAudit(keyring.store, "mcp.remember")
        keyring.store = held  # type: ignore[assignment]

        async def remember(url: str) -> Any:
            headers = {"authorization": f"Bearer {agent.token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                args = {k: v for k, v in obs().items() if k != "user_id"}
                return await session.call_tool("remember", args)

        calls = _Calls()
        with serve(app) as base:
            result: list[Any] = []
            mcp = threading.Thread(target=lambda: result.append(
                anyio.run(remember, base + "/mcp")), daemon=True)  # fmt: skip
            mcp.start()
            until(lambda: held.held >= 1, "the tool call's audit write held")
            calls.start("health", lambda: request(base, admin, "GET", "/v1/health"))
            calls.start("facts", lambda: request(base, admin, "GET", "/v1/users/u1/facts"))
            until(lambda: len(calls.done) == 2, "the other requests answered meanwhile")
            held.released.set()
            mcp.join(timeout=60)
            calls.join()
    assert result and not result[0].is_error
    assert calls.answers["health"][0] == 200
    assert [f["key"] for f in calls.answers["facts"][1]["facts"]] == ["airline.preferred"]
    assert [r.action for r in keyring.audit(subject="u1") if r.key_id == agent.key.key_id] == [
        "mcp.remember"
    ]
