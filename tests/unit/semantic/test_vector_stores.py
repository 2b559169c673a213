"""Every ``VectorStore`` adapter keeps, scores and forgets vectors alike (one contract)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memkg import Engine, EngineConfig, FrozenClock
from memkg.semantic.postgres import PostgresVectorStore
from memkg.semantic.sqlite import SqliteVectorStore
from memkg.semantic.store import MemoryVectorStore, VectorStore, text_digest
from support.observations import T0, obs

MODEL = "test-model@3"
USERS = ("u1", "u2", "user-7f3a9c-marker", "keeper")


def _streams(engine: Engine) -> Engine:
    """``engine`` with a stream for each of ``USERS``: vectors are kept only beside one."""
    for user in USERS:
        engine.ingest(obs(user_id=user))
    return engine


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    made: VectorStore
    if request.param == "memory":
        events = _streams(Engine(clock=FrozenClock(T0)))
        made = MemoryVectorStore(events.store.stream_mark)
    elif request.param == "sqlite":
        events = _streams(Engine.open(tmp_path / "memkg.db", clock=FrozenClock(T0)))
        made = SqliteVectorStore(tmp_path / "memkg.db")
    else:
        dsn, schema = request.getfixturevalue("postgres_dsn"), request.getfixturevalue("pg_schema")
        events = _streams(Engine.connect(dsn, clock=FrozenClock(T0),
                                         config=EngineConfig(pg_schema=schema)))  # fmt: skip
        made = PostgresVectorStore(dsn, schema=schema)
    yield made
    made.close()
    events.close()


def test_put_get_and_cosine(store: VectorStore) -> None:
    a, b = text_digest(MODEL, "asthma"), text_digest(MODEL, "printer")
    store.put("u1", MODEL, {a: [1.0, 0.0, 0.0], b: [0.6, 0.8, 0.0]}, 0)
    store.put("u1", MODEL, {a: [0.0, 0.0, 1.0]}, 0)  # a stored digest keeps its vector
    assert store.get("u1", MODEL, [a, b, "missing"]) == {
        a: [1.0, 0.0, 0.0], b: pytest.approx([0.6, 0.8, 0.0]),
    }  # fmt: skip
    close = store.similarities("u1", MODEL, [1.0, 0.0, 0.0], [a, b])
    assert close == {a: pytest.approx(1.0), b: pytest.approx(0.6)}
    assert store.get("u1", "other-model", [a]) == {} and store.get("u2", MODEL, [a]) == {}


def test_vectors_are_float32_and_scored_alike(store: VectorStore) -> None:
    digest = text_digest(MODEL, "x")
    store.put("u1", MODEL, {digest: [1 / 3, math.pi, -2.5]}, 0)
    [got] = store.get("u1", MODEL, [digest]).values()
    assert got == pytest.approx([1 / 3, math.pi, -2.5], rel=1e-6) and got[0] != 1 / 3


def test_erase_user_removes_only_that_user(store: VectorStore) -> None:
    digest = text_digest(MODEL, "asthma")
    store.put("u1", MODEL, {digest: [1.0, 0.0]}, 0)
    store.put("u2", MODEL, {digest: [0.0, 1.0]}, 0)
    assert (store.erase_user("u1"), store.erase_user("u1")) == (1, 0)
    assert store.count("u1") == 0 and store.count("u2") == 1
    assert store.get("u2", MODEL, [digest]) == {digest: [0.0, 1.0]}


def test_many_digests_in_one_read(store: VectorStore) -> None:
    vectors = {text_digest(MODEL, str(i)): [float(i), 1.0] for i in range(1_200)}
    store.put("u1", MODEL, vectors, 0)
    assert len(store.get("u1", MODEL, list(vectors))) == 1_200


def test_vectors_are_kept_only_beside_the_memory_they_were_read_from(
    store: VectorStore,
) -> None:
    digest = text_digest(MODEL, "asthma")
    assert not store.put("u1", MODEL, {digest: [1.0, 0.0]}, 1)  # a purge ran since the read
    assert not store.put("nobody", MODEL, {digest: [1.0, 0.0]}, 0)  # no stream: erased
    assert store.count("u1") == store.count("nobody") == 0
    assert store.put("u1", MODEL, {digest: [1.0, 0.0]}, 0) and store.count("u1") == 1


def test_sqlite_erasure_leaves_no_byte_of_the_user(tmp_path: Path) -> None:
    path = tmp_path / "memkg.db"
    events = _streams(Engine.open(path, clock=FrozenClock(T0)))
    store = SqliteVectorStore(path)
    marker = "user-7f3a9c-marker"
    digests: Callable[[int], str] = lambda i: text_digest(MODEL, f"memory {i}")  # noqa: E731
    store.put(marker, MODEL, {digests(i): [0.1 * i, 1.0] for i in range(300)}, 0)
    store.put("keeper", MODEL, {digests(0): [1.0, 0.0]}, 0)
    assert any(digests(5).encode() in p.read_bytes() for p in store.files())
    assert store.erase_user(marker) == 300
    leaked = [p.name for p in store.files() if digests(5).encode() in p.read_bytes()]
    assert leaked == [] and store.count("keeper") == 1
    events.erase(marker)  # the events that let the vectors be kept
    found = [p.name for p in store.files() if marker.encode() in p.read_bytes()]
    assert found == [] and store.count("keeper") == 1
    store.close()
    events.close()
