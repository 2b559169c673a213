"""No decision outlives the facts it read: a decision whose user is erased, or whose facts are
purged by audit id, after it read memory and before it is logged, is not logged as made; it
is made again on the memory as it now is, and that decision is logged and returned. The race
is made certain: the erasure runs inside the decision's append, before its row is written, by
the same engine (in memory) or by another engine on the same database (SQLite, PostgreSQL),
and with the decision log kept apart from the events (another SQLite file)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.decisions.sqlite import SqliteDecisionLog
from memkg.errors import ConcurrencyConflict
from support.observations import T0, obs

USER = "traveller-Qx71"
OTHER = "someone-else"
AUDIT = "aud-race-1"
CONTEXT = {"airline": "airline:MU"}


class _EraseFirst:
    """The engine's decision log, whose next appends first let ``erase`` run: the erasure
    lands after the decision read memory and before its row is written."""

    def __init__(self, log: Any, erase: Callable[[], object], times: int = 1) -> None:
        self._log, self._erase, self._times = log, erase, times

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._log, name)
        if name not in ("append", "append_checked"):
            return method

        def erase_then(*args: Any, **kwargs: Any) -> Any:
            if self._times > 0:
                self._times -= 1
                self._erase()
            return method(*args, **kwargs)

        return erase_then


@contextmanager
def _engines(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Engine, Engine]]:
    """The deciding engine and the erasing one (the same engine for ``memory``)."""
    if backend == "memory":
        with Engine(clock=FrozenClock(T0)) as engine:
            yield engine, engine
        return
    with ExitStack() as stack:
        if backend == "postgres":
            db = request.getfixturevalue("postgres_dsn")
            config = EngineConfig(pg_schema=request.getfixturevalue("pg_schema"))
            engines = [stack.enter_context(Engine.open(db, config=config)) for _ in range(2)]
        else:
            db = str(tmp_path / "memkg.db")
            apart = backend == "sqlite-apart"
            engines = [
                stack.enter_context(Engine.open(db, **_apart(tmp_path) if apart else {}))
                for _ in range(2)
            ]
        yield engines[0], engines[1]


def _apart(tmp_path: Path) -> dict[str, Any]:
    """The decision log in a file of its own."""
    return {"decision_log": SqliteDecisionLog(tmp_path / "decisions.db")}


def _rows(engine: Engine, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Every stored decision row, as text."""
    if backend == "memory":
        return repr(engine.decision_log.__dict__)
    if backend == "postgres":
        import psycopg

        schema = request.getfixturevalue("pg_schema")
        with psycopg.connect(request.getfixturevalue("postgres_dsn")) as conn:
            return repr(conn.execute(f'SELECT * FROM "{schema}".decisions').fetchall())
    name = "decisions.db" if backend == "sqlite-apart" else "memkg.db"
    with sqlite3.connect(tmp_path / name) as conn:
        return repr(conn.execute("SELECT * FROM decisions").fetchall())


BACKENDS = [
    "memory",
    "sqlite",
    "sqlite-apart",
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("erasure", ["erase", "erase_audit_id"])
def test_a_decision_racing_an_erasure_is_made_again_on_the_memory_left(
    backend: str, erasure: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with _engines(backend, tmp_path, request) as (engine, other):
        provenance = {"provenance": {"audit_log_id": AUDIT}}
        fact = engine.ingest(obs(user_id=USER, key="airline.avoided", value=["airline:MU"],
                                 **provenance)).fact_id  # fmt: skip
        engine.ingest(obs(user_id=USER, key="seat.preference", value="aisle"))
        engine.ingest(obs(user_id=OTHER, key="airline.avoided", value=["airline:MU"]))
        kept = engine.decide(OTHER, "travel", CONTEXT)
        assert fact in engine.decide(USER, "travel", CONTEXT).model_dump_json()  # it cites it
        erase = (lambda: other.erase(USER)) if erasure == "erase" else (
            lambda: other.erase_audit_id(AUDIT))  # fmt: skip
        decider = engine.intent
        real = decider.log
        decider.log = _EraseFirst(real, erase)
        try:
            made = engine.decide(USER, "travel", CONTEXT)
        finally:
            decider.log = real
        assert fact not in made.model_dump_json()
        logged = engine.decision_log.get(made.decision_id)  # what was returned is logged
        # (a trace read before the erasure is not kept: the record may name it, as ever)
        assert made.model_copy(update={"trace_id": logged.trace_id}) == logged
        assert engine.replay(made.decision_id).reproduced
        assert engine.decision_log.get(kept.decision_id) == kept
        rows = _rows(engine, backend, tmp_path, request)
        assert fact not in rows and made.decision_id in rows
        if erasure == "erase":  # only the decision made afresh is left of the user
            assert [d.decision_id for d in engine.decisions(USER)] == [made.decision_id]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_decision_erased_under_it_at_every_attempt_gives_up_with_a_conflict(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with _engines(backend, tmp_path, request) as (engine, other):
        engine.ingest(obs(user_id=USER, key="airline.avoided", value=["airline:MU"]))
        decider = engine.intent
        real = decider.log
        decider.log = _EraseFirst(real, lambda: other.erase(OTHER), times=1000)
        try:
            with pytest.raises(ConcurrencyConflict, match="erasure") as raised:
                engine.decide(USER, "travel", CONTEXT)
        finally:
            decider.log = real
        assert raised.value.code == "decision.erased_meanwhile"
        assert engine.decisions(USER) == []
