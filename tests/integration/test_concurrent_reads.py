"""A read of a user's facts or of a key's history while another thread writes to that user.

With the service's gate gone, ``GET /v1/users/{user}/facts`` (``Engine.facts``) and
``GET /v1/users/{user}/history/{key}`` (``Engine.history``) run beside writes to the same
user. Both walked the resident memory's indexes (``UserMemory._live``, ``_by_key``) holding
no lock while a write folded its events into them in place: a write that made a key's first
live claim changed the index's size under the walk (``RuntimeError: dictionary changed size
during iteration``, a 500 over HTTP).

The moment is made certain, as in ``tests/unit/engine/test_concurrent_validation.py``: the
index, walked by the read, lets a write in another thread run to its end after the first
item, unless the reading thread holds the engine's lock (a write cannot come in then, and
none is let in). What is asserted is the outcome: every read answers, and the write is
stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memkg import Engine, FrozenClock
from memkg.roots import builtin
from support.observations import T0, obs
from support.service import client, keyed_app, token


class _WriteMidWalk(dict[Any, Any]):
    """A memory index whose walk (``items()`` or iteration) lets ``write`` run in another
    thread after the first item, once, and waits for it (unless the walker holds ``lock``)."""

    def __init__(self, held: dict[Any, Any], lock: Any, write: Callable[[], object]) -> None:
        super().__init__(held)
        self.lock, self.write = lock, write
        self.writes = 0
        self.failed: list[BaseException] = []

    def _between(self) -> None:
        if self.writes or self.lock._is_owned():  # held: no write comes in
            return
        self.writes += 1
        writer = threading.Thread(target=self._write, daemon=True)
        writer.start()
        writer.join(timeout=30)  # another lock of a fix's could hold it: the walk goes on

    def _write(self) -> None:
        try:
            self.write()
        except BaseException as exc:  # asserted by the tests
            self.failed.append(exc)

    def finish(self) -> None:
        """The write, now, if the walk let none in (its walker held the lock)."""
        if not self.writes:
            self.writes += 1
            self._write()

    def _walk(self, items: Iterator[Any]) -> Iterator[Any]:
        for n, item in enumerate(items):
            yield item
            if n == 0:
                self._between()

    def items(self) -> Any:
        return self._walk(iter(dict.items(self)))

    def __iter__(self) -> Iterator[Any]:
        return self._walk(iter(dict.keys(self)))

    def values(self) -> Any:
        return self._walk(iter(dict.values(self)))


def _engine(tmp_path: Path) -> Engine:
    engine = Engine.open(tmp_path / "m.db", clock=FrozenClock(T0))
    engine.ingest(obs(value="airline:MU"))
    engine.ingest(obs(key="airline.avoided", value=["airline:CA"]))
    return engine


def _seat(engine: Engine) -> Callable[[], object]:
    """A write making the user's first live claim of a key: a new entry in both indexes."""
    return lambda: engine.ingest(obs(key="seat.preference", value="aisle"))


def test_facts_read_while_a_write_adds_a_key_answers(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        memory = engine.memory("u1")
        walk = memory._live = _WriteMidWalk(memory._live, engine.lock, _seat(engine))
        found = engine.facts("u1")
        walk.finish()
        assert walk.failed == []
        assert {f.key for f in found} >= {"airline.preferred", "airline.avoided"}
        assert {f.key for f in engine.facts("u1")} == {
            "airline.preferred",
            "airline.avoided",
            "seat.preference",
        }


def test_history_read_while_a_write_adds_a_key_answers(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        memory = engine.memory("u1")
        walk = memory._by_key = _WriteMidWalk(memory._by_key, engine.lock, _seat(engine))
        found = engine.history("u1", "airline.preferred")
        walk.finish()
        assert walk.failed == []
        assert [f.value for f in found] == ["airline:MU"]
        assert [f.value for f in engine.history("u1", "seat.preference")] == ["aisle"]


def test_facts_over_http_while_a_write_adds_a_key_is_answered(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        app, keyring = keyed_app(engine)
        memory = engine.memory("u1")
        walk = memory._live = _WriteMidWalk(memory._live, engine.lock, _seat(engine))
        with client(app, token(keyring), raise_server_exceptions=False) as http:
            answer = http.get("/v1/users/u1/facts")
            walk.finish()
            after = http.get("/v1/users/u1/facts")
        assert walk.failed == [] and walk.writes == 1
        assert answer.status_code == 200, answer.text
        assert {f["key"] for f in after.json()["facts"]} == {
            "airline.preferred",
            "airline.avoided",
            "seat.preference",
        }


def test_a_migration_dry_run_while_a_write_adds_a_fact_answers(tmp_path: Path) -> None:
    """``POST /v1/admin/migrations/dry-run`` walks each user's facts (``migrations.live_facts``)
    beside writes to them."""
    plan = builtin("examples") / "schemas/health/migrations/diet_organ_meat.yaml"
    with _engine(tmp_path) as engine:
        engine.ingest(
            obs(
                domain="health",
                key="diet.restrictions",
                value=["halal"],
                provenance={"consent_granted": True, "consent_version": "v1"},
            )
        )
        memory = engine.memory("u1")
        walk = memory._facts = _WriteMidWalk(memory._facts, engine.lock, _seat(engine))
        report = engine.migration_dry_run(plan)
        walk.finish()
        assert walk.failed == []
        assert report.verdict in ("PASS", "WARN", "BLOCK")
        assert "seat.preference" in {f.key for f in engine.facts("u1")}


def test_a_turtle_export_while_a_write_adds_a_fact_answers(tmp_path: Path) -> None:
    """``Engine.graph(fmt="turtle")`` walks the resident memory (its facts, the RDF dataset
    built on first use) as ``facts`` does."""
    with Engine.open(tmp_path / "m.db", clock=FrozenClock(T0)) as engine:
        engine.ingest(obs(value="airline:MU"))
        engine.ingest(obs(key="airline.avoided", value=["airline:CA"]))
        memory = engine.memory("u1")
        write = lambda: engine.ingest(obs(key="seat.preference", value="aisle"))  # noqa: E731
        walk = memory._facts = _WriteMidWalk(memory._facts, engine.lock, write)
        text = engine.graph("u1", fmt="turtle")  # unlocked, the walk failed mid-write
        walk.finish()
        assert walk.failed == [] and isinstance(text, str)
        assert "aisle" in str(engine.graph("u1", fmt="turtle"))
