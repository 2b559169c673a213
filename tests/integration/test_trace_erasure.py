"""No trace outlives its user: a request for an erased user, or one whose memory is off, keeps
no trace, and a request racing with the user's erasure (by this engine or by another one on
the same database) leaves no trace behind, whichever finishes first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from support.observations import T0, obs

USER = "traveller-Kw38z"
OTHER = "someone-else"


def _fill(engine: Engine, user: str = USER) -> None:
    engine.ingest(obs(user_id=user, value="airline:MU"))
    engine.ingest(obs(user_id=user, key="seat.preference", value="aisle"))


REQUESTS: dict[str, Callable[[Engine, str], Any]] = {
    "render_profile": lambda engine, user: engine.render_profile(user, "travel"),
    "recall": lambda engine, user: engine.recall(user, "which airline", domain="travel"),
    "decide": lambda engine, user: engine.decide(user, "travel", {"airline": "airline:CZ"}),
}


def _requests(engine: Engine, user: str = USER) -> dict[str, str | None]:
    """The trace id each traced request returns for ``user``."""
    return {name: request(engine, user).trace_id for name, request in REQUESTS.items()}


def _bytes_of(folder: Path, needle: str) -> list[str]:
    return [p.name for p in folder.iterdir() if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_requests_for_an_erased_user_keep_no_trace(tmp_path: Path, backend: str) -> None:
    db = ":memory:" if backend == "memory" else tmp_path / "memkg.db"
    with Engine.open(db, clock=FrozenClock(T0)) as engine:
        _fill(engine)
        _fill(engine, OTHER)
        assert all(_requests(engine).values())
        engine.erase(USER)
        profile = engine.render_profile(USER, "travel")
        found = engine.recall(USER, "which airline", domain="travel")
        assert profile.trace_id is None and found.trace_id is None
        assert engine.decide(USER, "travel", {"airline": "airline:CZ"}).trace_id is None
        assert engine.render_profile(OTHER, "travel").trace_id is not None
    if backend == "sqlite":  # the decision above is logged, and names the user: erase it
        with Engine.open(db) as again:
            again.erase(USER)
        assert _bytes_of(tmp_path, USER) == []


def test_a_user_memkg_never_stored_keeps_no_trace(engine: Engine) -> None:
    """Nothing of theirs can have been injected, so nothing about them is kept."""
    assert set(_requests(engine, "newcomer").values()) == {None}


@pytest.mark.parametrize("mode", ["keep", "erase"])
def test_requests_while_memory_is_off_keep_no_trace(engine: Engine, mode: str) -> None:
    _fill(engine)
    engine.disable_memory(USER, mode=mode, reason="asked")
    assert set(_requests(engine).values()) == {None}
    engine.enable_memory(USER)
    if mode == "keep":
        assert all(_requests(engine).values())


class _ThenErase:
    """A stage service whose one method, once it has read memory and answered, lets the
    user's erasure run before the trace is written: the race, made certain."""

    def __init__(self, service: Any, name: str, erase: Callable[[str], object]) -> None:
        self._service, self._name, self._erase = service, name, erase

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._service, name)
        if name != self._name:
            return method

        def then_erase(user_id: str, *args: Any, **kwargs: Any) -> Any:
            answer = method(user_id, *args, **kwargs)
            self._erase(user_id)
            return answer

        return then_erase


SERVICES = {"render_profile": "lifecycle", "recall": "recalls", "decide": "decider"}


def _race(engine: Engine, request: str, erase: Callable[[str], object]) -> str | None:
    """``request`` for the user, with their erasure between the read and the trace."""
    tracer = engine.tracer
    service = SERVICES[request]
    real = getattr(tracer, service)
    setattr(tracer, service, _ThenErase(real, request, erase))
    try:
        trace_id: str | None = REQUESTS[request](engine, USER).trace_id
        return trace_id
    finally:
        setattr(tracer, service, real)


@pytest.mark.parametrize("request_name", sorted(SERVICES))
def test_an_erasure_by_the_same_engine_racing_a_request_leaves_no_trace(
    engine: Engine, request_name: str
) -> None:
    _fill(engine)
    _fill(engine, OTHER)
    kept = engine.render_profile(OTHER, "travel").trace_id or ""
    assert _race(engine, request_name, engine.erase) is None
    assert engine.trace(kept).user_id == OTHER
    assert USER not in repr(engine.tracer.traces.__dict__)


@pytest.fixture
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "postgres":
        yield request.getfixturevalue("postgres_dsn"), request.getfixturevalue("pg_schema")
    else:
        yield str(tmp_path / "memkg.db"), "memkg"


@pytest.mark.parametrize(
    "database", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)
@pytest.mark.parametrize("request_name", sorted(SERVICES))
def test_an_erasure_by_another_engine_racing_a_request_leaves_no_trace(
    database: tuple[str, str], request_name: str, tmp_path: Path
) -> None:
    db, schema = database
    config = EngineConfig(pg_schema=schema)
    with Engine.open(db, config=config) as engine, Engine.open(db, config=config) as other:
        _fill(engine)
        _fill(engine, OTHER)
        kept = engine.render_profile(OTHER, "travel").trace_id or ""
        before = _requests(engine)
        assert _race(engine, request_name, other.erase) is None
        for trace_id in before.values():  # the erasure took the earlier ones
            with pytest.raises(Exception, match="no trace"):
                engine.trace(trace_id or "")
        assert engine.trace(kept).user_id == OTHER
        rows = _trace_rows(engine, db, schema)
    assert USER not in rows and OTHER in rows
    if not db.startswith("postgresql://"):
        assert _bytes_of(tmp_path, USER) == []


def _trace_rows(engine: Engine, db: str, schema: str) -> str:
    """Every stored trace row, as text."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            return repr(conn.execute(f'SELECT * FROM "{schema}".traces').fetchall())
    import sqlite3

    with sqlite3.connect(db) as conn:
        return repr(conn.execute("SELECT * FROM traces").fetchall())
