"""The resident users' graphs stay within the configured memory bound, by estimated bytes."""

from __future__ import annotations

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from support.observations import T0, obs

SEATS = ["window", "aisle", "middle"]


def _write(engine: Engine, user: str, count: int) -> None:
    for index in range(count):
        key = ["seat.preference", "cabin.class", "airline.preferred"][index % 3]
        value = {"seat.preference": SEATS[index % 3], "cabin.class": "economy",
                 "airline.preferred": "airline:MU"}[key]  # fmt: skip
        engine.ingest(obs(user_id=user, key=key, value=value, source="behavior"))


def test_the_graphs_of_resident_users_stay_within_the_bound() -> None:
    bound = 100_000  # about four users of 20 facts each
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False, memory_bound=bound))
    users = [f"u{n}" for n in range(12)]
    sizes = {}
    for user in users:
        _write(engine, user, 20)
        sizes[user] = engine.user_graph(user).estimated_bytes()
        assert engine.projections.graph_bytes <= bound
    # the bound, not a user count, decides how many stay: the newest ones that fit
    resident = engine.projections.resident_graphs()
    assert 1 < resident < len(users)
    assert sum(sizes[u] for u in users[-resident:]) <= bound
    assert sum(sizes[u] for u in users[-resident - 1 :]) > bound
    # a user who left memory is rebuilt from the log when read, with every fact
    first = engine.user_graph("u0")
    assert len(first.memory.facts) == 20
    assert engine.projections.graph_bytes <= bound


def test_a_user_larger_than_the_bound_is_served_alone() -> None:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False, memory_bound=20_000))
    _write(engine, "small", 3)
    _write(engine, "large", 30)
    assert engine.user_graph("large").estimated_bytes() > 20_000
    assert engine.projections.resident_graphs() == 1  # only the user being served stays
    engine.user_graph("small")
    assert engine.projections.resident_graphs() == 1 and engine.projections.graph_bytes <= 20_000


def test_an_rdf_dataset_built_for_export_counts_against_the_bound() -> None:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False, memory_bound=10**6))
    _write(engine, "u1", 12)
    before = engine.projections.graph_bytes
    engine.graph("u1", "travel", fmt="turtle")  # builds the user's rdflib dataset
    engine.user_graph("u1")
    assert engine.projections.graph_bytes > 5 * before


def test_the_bound_holds_every_projection_of_a_user_and_evicts_them_together() -> None:
    """A user's facts are folded once (the graph's fold is the memory reads return), so the
    bound counts them; a user the bound evicts leaves every cache, derived ones included."""
    bound = 100_000
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False, memory_bound=bound))
    users = [f"u{n}" for n in range(12)]
    for user in users:
        _write(engine, user, 20)
        assert len(engine.facts(user)) == 3  # a read of the live facts alone
        assert len(engine.memory(user).facts) == 20
        assert engine.memory(user) is engine.user_graph(user).memory
        engine.resolve(user, "travel", "seat.preference")  # reviews and live claims too
        assert engine.projections.graph_bytes <= bound
    resident = engine.projections.resident_graphs()
    assert 1 < resident < len(users)
    # what is resident is exactly the users whose graphs the bound kept
    assert engine.projections.users() == users[-resident:]


def test_by_default_bytes_alone_decide_how_many_users_stay() -> None:
    """No count bound by default: many small users stay resident while their bytes fit, and
    the byte bound still evicts the least recently used once they do not."""
    assert EngineConfig().resident_users is None
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    users = [f"u{n}" for n in range(1_100)]  # more than any count a cache would pick
    for user in users:
        _write(engine, user, 1)
    assert engine.projections.resident_graphs() == len(users)
    assert len(engine.projections.users()) == len(users)
    per_user = engine.projections.graph_bytes // len(users)
    tight_config = EngineConfig(shacl=False, memory_bound=per_user * 50)
    tight = Engine(clock=FrozenClock(T0), config=tight_config)
    for user in users[:200]:
        _write(tight, user, 1)
    assert 1 < tight.projections.resident_graphs() <= 60
    assert tight.projections.users() == users[200 - tight.projections.resident_graphs() : 200]
