"""An erasure served while another request about the same person is under way leaves the
person's id in the clear nowhere in the access audit, and an id erased before a request began
(taken again since) is left alone.

The dispatcher writes a request's audit records after its engine call, and the MCP server
after its tool call; an erasure served meanwhile pseudonymises only the records written by
then, so the request pseudonymises its own records when someone they name (subject, or the
other id of a merge) was erased since it began (``Gate.erased_since``).

The race is made certain, not timed: the in-flight request's record waits (``Keyring.record``
held) until the erasure has answered. The server is set up as ``memkg serve`` sets it up: the
keys and the audit in the memory's SQLite file (``SqliteAccessStore``), which the erasure
rewrites in its own transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
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
from support.live_service import request, serve, until  # noqa: E402
from support.observations import T0, obs  # noqa: E402

PERSON = "traveller-7f3k"


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
        with serve(app) as base:
            first = threading.Thread(target=lambda: answers.__setitem__(
                "request", request(base, agent, method, path, body)), daemon=True)  # fmt: skip
            first.start()
            until(lambda: held.held >= 1, "the request's engine call done, its record held")
            answers["erase"] = request(base, officer, "DELETE", f"/v1/users/{PERSON}")
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
        with serve(app) as base:
            mcp = threading.Thread(target=lambda: result.append(
                anyio.run(recall_facts, base + "/mcp")), daemon=True)  # fmt: skip
            mcp.start()
            until(lambda: held.held >= 1, "the tool call done, its record held")
            erased = request(base, officer, "DELETE", f"/v1/users/{PERSON}")
            held.released.set()
            mcp.join(timeout=60)
            assert not mcp.is_alive(), "the tool call never answered"
        named = [(r.action, r.subject) for r in keyring.audit(subject=PERSON)]
    assert erased[0] == 200 and result and not result[0].is_error
    assert named == [], f"the erased person is named in the audit after their erasure: {named}"


A, B = "traveller-a1", "traveller-b2"


def test_a_merge_in_flight_while_the_other_id_is_erased_names_it_nowhere(tmp_path: Path) -> None:
    with _served_as_memkg_serve(tmp_path) as (engine, keyring, app):
        engine.ingest(obs(user_id=A))
        engine.ingest(obs(user_id=B))
        agent = keyring.create("agent", ["read", "write"], ["*"]).token
        officer = keyring.create("officer", ["erase"], ["*"]).token
        held = _HeldRecords(keyring, "merge_users")
        keyring.record = held  # type: ignore[method-assign]
        answers: dict[str, tuple[int, Any]] = {}
        body = {"other": B, "by": "agent", "reason": "same passport"}
        with serve(app) as base:
            first = threading.Thread(target=lambda: answers.__setitem__(
                "merge", request(base, agent, "POST", f"/v1/users/{A}/merges", body)),
                daemon=True)  # fmt: skip
            first.start()
            until(lambda: held.held >= 1, "the merge done, its record held")
            answers["erase"] = request(base, officer, "DELETE", f"/v1/users/{B}")
            held.released.set()
            first.join(timeout=60)
        assert answers["merge"][0] < 300 and answers["erase"][0] == 200, answers
        named = [(r.action, r.subject, r.target) for r in keyring.audit(target=B)]
        named += [(r.action, r.subject, r.target) for r in keyring.audit(subject=B)]
    assert named == [], f"the erased id is named in the audit after its erasure: {named}"


def test_an_unrelated_erasure_leaves_a_reused_id_and_its_key_alone(tmp_path: Path) -> None:
    with _served_as_memkg_serve(tmp_path) as (engine, keyring, app):
        engine.ingest(obs(user_id=A))
        engine.ingest(obs(user_id=B))
        officer = keyring.create("officer", ["erase"], ["*"]).token
        with serve(app) as base:
            assert request(base, officer, "DELETE", f"/v1/users/{A}")[0] == 200
        # the id is taken again (a new user, or the same person starting over): a new key
        engine.ingest(obs(user_id=A, value="airline:CA"))
        own = keyring.create("own", ["read", "write"], ["*"], user_id=A).token
        held = _HeldRecords(keyring, "facts")
        keyring.record = held  # type: ignore[method-assign]
        answers: dict[str, tuple[int, Any]] = {}
        with serve(app) as base:
            def read() -> None:
                answers["facts"] = request(base, own, "GET", f"/v1/users/{A}/facts")

            first = threading.Thread(target=read, daemon=True)
            first.start()
            until(lambda: held.held >= 1, "A's read done, its record held")
            # someone else is erased meanwhile
            answers["erase"] = request(base, officer, "DELETE", f"/v1/users/{B}")
            held.released.set()
            first.join(timeout=60)
            assert answers["facts"][0] == 200 and answers["erase"][0] == 200, answers
            again = request(base, own, "GET", f"/v1/users/{A}/facts")
        since = [r for r in keyring.audit(subject=A) if r.action == "facts"]
    # A's key, made after A's erasure, still serves A, and A's reads are found under A
    assert again[0] == 200, f"A's own key no longer serves A: {again}"
    assert len(since) == 2, f"A's reads since the erasure are not under A: {since}"
