"""A rebuild folds the log user after user and holds one user's memory at a time: what it
needs does not grow with the number of users (it held every user's folded memory until the
end: 625 MB at a million facts, whatever the configured memory bound)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from memkg import Engine, FrozenClock
from memkg.events.projection import UserMemory, fold_all
from support.observations import T0, obs

USERS = 60
PER_USER = 12


def _fill(engine: Engine) -> None:
    seats = ("aisle", "window", "middle")
    for user in range(USERS):
        engine.ingest_many([obs(user_id=f"u{user:02d}", key="seat.preference",
                                value=seats[n % 3]) for n in range(PER_USER)])  # fmt: skip


def _memories() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is UserMemory)


def _held_while_folding(engine: Engine) -> tuple[list[int], object]:
    """The number of users' memories the rebuild holds at each of its progress calls (those
    alive then, less those alive before: another test's may still be), and the rebuild's
    report."""
    gc.collect()
    before, alive = _memories(), []

    def progress(_count: int) -> None:
        alive.append(_memories() - before)

    return alive, engine.rebuild(progress=progress)


@pytest.fixture
def stores(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, str | Path]]:
    if request.param == "sqlite":
        yield "sqlite", tmp_path / "m.db"
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        yield "postgres", f"{dsn}|{request.getfixturevalue('pg_schema')}"


def _open(where: str | Path) -> Engine:
    if isinstance(where, Path):
        return Engine.open(where, clock=FrozenClock(T0))
    dsn, schema = where.split("|")
    return Engine.connect(dsn, schema=schema, clock=FrozenClock(T0))


@pytest.mark.parametrize("stores", ["sqlite", "postgres"], indirect=True)
def test_a_rebuild_holds_one_users_memory_at_a_time(stores: tuple[str, str | Path]) -> None:
    _kind, where = stores
    with _open(where) as writer:
        _fill(writer)
        expected, events = fold_all(writer.store.read_all())
        users, facts = len(expected), sum(m.count for m in expected.values())
    del writer, expected
    gc.collect()
    with _open(where) as engine:  # no user resident: what is alive is the rebuild's
        alive, report = _held_while_folding(engine)
    assert (report.users, report.events, report.facts) == (users, events, facts)
    assert (users, facts) == (USERS, USERS * PER_USER)
    assert len(alive) == events // 1000 >= 1
    assert max(alive) <= 2, alive  # the user being folded (and one just let go)
