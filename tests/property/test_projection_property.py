"""Invariants of the log: rebuilding equals the live projection; history is never lost."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg import Engine, EngineConfig, FactStatus, FrozenClock
from memkg.events.projection import UserMemory
from support.observations import T0

USERS = ["ana", "bo"]
CITIES = ["city:beijing", "city:shanghai", "city:tokyo"]
SEATS = ["window", "aisle", "middle"]

write = st.one_of(
    st.tuples(
        st.just("assert"),
        st.sampled_from(USERS),
        st.sampled_from(["seat.preference"]),
        st.sampled_from(SEATS),
        st.sampled_from(["dialogue", "behavior"]),
    ),
    st.tuples(
        st.just("assert"),
        st.sampled_from(USERS),
        st.just("location.city"),
        st.sampled_from(CITIES),
        st.sampled_from(["profile", "dialogue"]),
    ),
    st.tuples(st.just("retract"), st.sampled_from(USERS), st.integers(0, 20)),
    st.tuples(st.just("confirm"), st.sampled_from(USERS), st.integers(0, 20)),
    st.tuples(st.just("tick"), st.integers(1, 100)),
)

CONFIG = EngineConfig(shacl=False)  # shapes are tested elsewhere; here only the log matters


def _run(engine: Engine, clock: FrozenClock, steps: list[tuple[object, ...]]) -> None:
    for step in steps:
        match step:
            case ("assert", user, key, value, source):
                engine.ingest(
                    {
                        "user_id": user,
                        "domain": "travel",
                        "key": key,
                        "value": value,
                        "source": source,
                        "confidence": 0.8,
                    }
                )
            case ("retract" | "confirm" as verb, user, index):
                live = [
                    f
                    for f in engine.memory(str(user)).facts.values()
                    if f.status in (FactStatus.ACTIVE, FactStatus.PENDING_CONFIRMATION)
                ]
                if not live:
                    continue
                fact = sorted(live, key=lambda f: f.id)[int(str(index)) % len(live)]
                if verb == "retract":
                    engine.retract(str(user), fact.id, "forget that")
                elif fact.status is FactStatus.PENDING_CONFIRMATION:
                    engine.confirm(str(user), fact.id)
            case ("tick", hours):
                clock.advance(timedelta(hours=int(str(hours))))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(write, max_size=25))
def test_rebuild_from_log_equals_live_projection(steps: list[tuple[object, ...]]) -> None:
    clock = FrozenClock(T0)
    engine = Engine(config=CONFIG, clock=clock)
    _run(engine, clock, steps)
    live = {user: dict(engine.memory(user).facts) for user in USERS}
    engine.rebuild()
    rebuilt = {user: dict(engine.memory(user).facts) for user in USERS}
    from_log = {
        user: UserMemory.from_events(user, engine.store.read_stream(user)).facts for user in USERS
    }
    assert live == rebuilt == from_log


@settings(max_examples=25, deadline=None)
@given(st.lists(write, max_size=25), st.integers(0, 40))
def test_as_of_equals_projection_of_the_first_n_events(
    steps: list[tuple[object, ...]], cut: int
) -> None:
    clock = FrozenClock(T0)
    engine = Engine(config=CONFIG, clock=clock)
    _run(engine, clock, steps)
    for user in USERS:
        events = engine.store.read_stream(user)
        prefix = [e for e in events if e.seq <= cut]
        assert engine.memory(user, as_of=cut).facts == UserMemory.from_events(user, prefix).facts


def test_asserted_superseded_retracted_keeps_full_history() -> None:
    clock = FrozenClock(T0)
    engine = Engine(config=CONFIG, clock=clock)
    base = {"user_id": "ana", "domain": "travel", "key": "seat.preference", "source": "dialogue"}
    first = engine.ingest({**base, "value": "window"})
    second = engine.ingest({**base, "value": "aisle"})
    engine.retract("ana", second.fact_id, "user: forget that")
    history = engine.history("ana", "seat.preference")
    assert [(f.value, f.status, f.status_reason) for f in history] == [
        ("window", FactStatus.SUPERSEDED, "restated by the same source"),
        ("aisle", FactStatus.RETRACTED, "user: forget that"),
    ]
    assert history[0].superseded_by == second.fact_id and history[0].id == first.fact_id
    types = [e.type.value for e in engine.store.read_stream("ana")]
    assert types == ["fact.asserted", "fact.asserted", "fact.superseded", "fact.retracted"]
