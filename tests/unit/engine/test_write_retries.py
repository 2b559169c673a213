"""Unconditional writes recompute on the fresh state after a concurrent append; conditional
writes fail at once. The concurrent writer is a second engine on the same store, writing
between the first engine's read and its append."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memkg import ConcurrencyConflict, Engine, EngineConfig, FrozenClock
from memkg.events.memory import MemoryEventStore
from memkg.events.retry import Attempts, pause, retry_conflicts, unconditional
from memkg.events.store import AppendResult
from memkg.model.event import NewEvent
from support.observations import CONSENTED, T0, obs


class InterleavedStore(MemoryEventStore):
    """Runs ``before_append`` (another engine's write) ahead of the next ``n`` appends."""

    def __init__(self) -> None:
        super().__init__()
        self.before_append: Callable[[], Any] | None = None
        self.times = 0
        self.appends = 0

    def append(self, user_id: str, events: Sequence[NewEvent], **kwargs: Any) -> AppendResult:
        hook = self.before_append
        if self.times and hook is not None:
            self.times -= 1
            self.before_append = None  # the other engine's own append runs plainly
            try:
                hook()
            finally:
                self.before_append = hook
        self.appends += 1
        return super().append(user_id, events, **kwargs)


@pytest.fixture
def pair() -> tuple[InterleavedStore, Engine, Engine]:
    store = InterleavedStore()
    clock = FrozenClock(T0)
    return store, Engine(store, clock=clock), Engine(store, clock=clock)


def test_a_retried_write_is_computed_again_on_the_fresh_state(
    pair: tuple[InterleavedStore, Engine, Engine],
) -> None:
    store, mine, theirs = pair
    mine.ingest(obs(value="airline:MU"))
    mine.facts("u1")  # cached at version 1
    others: list[str] = []
    store.before_append = lambda: others.append(theirs.ingest(obs(value="airline:CA")).fact_id)
    store.times = 1

    result = mine.ingest(obs(value="airline:HO"))

    # the other writer's claim (same source, same slot) came in between; recomputed on the
    # fresh state, this write supersedes it too, instead of leaving two live claims
    assert others and others[0] in result.superseded
    live = [f.value for f in mine.facts("u1") if f.key == "airline.preferred"]
    assert live == ["airline:HO"]
    assert (mine.conflicts.retried, mine.conflicts.surfaced) == (1, 0)
    assert result.version == mine.version("u1") == store.stream_version("u1")


def test_a_conditional_write_fails_at_once(pair: tuple[InterleavedStore, Engine, Engine]) -> None:
    store, mine, theirs = pair
    first = mine.ingest(obs(value="airline:MU"))
    store.before_append = lambda: theirs.ingest(obs(value="airline:CA", source="behavior"))
    store.times = 1
    appends = store.appends

    with pytest.raises(ConcurrencyConflict) as caught:
        mine.ingest(obs(value="airline:HO"), expected_version=first.version)

    assert caught.value.expected == 1 < caught.value.actual == store.stream_version("u1")
    assert store.appends - appends == 2  # the other engine's, then this one, never again
    assert (mine.conflicts.retried, mine.conflicts.surfaced) == (0, 0)


def test_confirm_and_signal_retry_too(pair: tuple[InterleavedStore, Engine, Engine]) -> None:
    store, mine, theirs = pair
    pending = mine.ingest(obs(domain="health", key="child.age", value=3, **CONSENTED))
    assert pending.status.value == "pending_confirmation"
    mine.facts("u1")
    store.before_append = lambda: theirs.ingest(obs(value="airline:CA"))
    store.times = 2

    mine.confirm("u1", pending.fact_id)
    mine.signal("u1", "travel", "airline.preferred", "airline:CA", "mention")

    assert mine.fact("u1", pending.fact_id).status.value == "active"
    assert (mine.conflicts.retried, mine.conflicts.surfaced) == (2, 0)


def test_a_confirmation_retried_after_another_confirmed_it_is_refused(
    pair: tuple[InterleavedStore, Engine, Engine],
) -> None:
    """The retry rereads the state: the fact is no longer pending, so the write is refused."""
    store, mine, theirs = pair
    pending = mine.ingest(obs(domain="health", key="child.age", value=3, **CONSENTED))
    mine.facts("u1")
    store.before_append = lambda: theirs.confirm("u1", pending.fact_id)
    store.times = 1

    with pytest.raises(Exception, match="not pending_confirmation"):
        mine.confirm("u1", pending.fact_id)
    confirmations = [e for e in store.read_stream("u1") if e.type.value == "fact.confirmed"]
    assert len(confirmations) == 1


def test_conflicts_surface_after_the_configured_retries() -> None:
    store = InterleavedStore()
    clock = FrozenClock(T0)
    mine = Engine(store, clock=clock, config=EngineConfig(write_retries=2))
    theirs = Engine(store, clock=clock)
    mine.ingest(obs(value="airline:MU", source="profile"))
    store.before_append = lambda: theirs.ingest(obs(value="airline:CA", source="behavior"))
    store.times = 10
    appends = store.appends

    with pytest.raises(ConcurrencyConflict):
        mine.ingest(obs(value="airline:HO"))
    assert (mine.conflicts.retried, mine.conflicts.surfaced) == (2, 1)
    assert store.appends - appends == 2 * 3  # three attempts, each after the other's write


def test_nested_retried_calls_do_not_multiply_attempts() -> None:
    calls = []

    def inner() -> None:
        calls.append("inner")
        raise ConcurrencyConflict("u", 1, 2)

    def outer() -> None:
        retry_conflicts(inner, retries=3, sleep=lambda _s: None)

    with pytest.raises(ConcurrencyConflict):
        retry_conflicts(outer, retries=3, sleep=lambda _s: None)
    assert len(calls) == 4


def test_pauses_grow_and_stay_bounded() -> None:
    import random

    rng = random.Random(7)
    firsts = [pause(1, rng) for _ in range(200)]
    lasts = [pause(12, rng) for _ in range(200)]
    assert max(firsts) <= 0.002 < max(lasts) <= 0.1
    assert len(set(firsts)) == 200  # jittered, not in step


class _Writer:
    """Conflicts on every call: whether a call retried shows in ``conflicts``."""

    def __init__(self) -> None:
        self.config = EngineConfig(write_retries=1)
        self.conflicts = Attempts()

    def _conflict(self) -> None:
        raise ConcurrencyConflict("u1", 1, 2)

    @unconditional
    def positional(self, user: str, expected_version: int | None = None) -> None:
        self._conflict()

    @unconditional
    def keyword_only(self, user: str, *, expected_version: int | None = None) -> None:
        self._conflict()

    @unconditional
    def without(self, user: str) -> None:
        self._conflict()


@pytest.mark.parametrize(
    ("call", "retried"),
    [
        (lambda w: w.positional("u1"), 1),
        (lambda w: w.positional("u1", None), 1),
        (lambda w: w.positional("u1", expected_version=None), 1),
        (lambda w: w.positional("u1", 3), 0),
        (lambda w: w.positional("u1", expected_version=0), 0),
        (lambda w: w.positional(user="u1", expected_version=3), 0),
        (lambda w: w.keyword_only("u1"), 1),
        (lambda w: w.keyword_only("u1", expected_version=3), 0),
        (lambda w: w.without("u1"), 1),
    ],
)
def test_expected_version_given_by_position_or_name_makes_a_write_conditional(
    call: Callable[[_Writer], None], retried: int
) -> None:
    writer = _Writer()
    with pytest.raises(ConcurrencyConflict):
        call(writer)
    assert (writer.conflicts.retried, writer.conflicts.surfaced) == (retried, retried)


def test_a_version_ahead_of_the_stream_is_said_to_be_ahead(engine: Engine) -> None:
    """A client that sends a version no write has reached is not told another writer came
    first (retrying would never help): it is told to send a version a read returned."""
    engine.ingest(obs(value="airline:MU"))
    with pytest.raises(ConcurrencyConflict) as ahead:
        engine.ingest(obs(value="airline:CA"), expected_version=7)
    assert "the stream is behind it" in ahead.value.message
    assert "another writer" not in ahead.value.message
    engine.ingest(obs(value="airline:CA"))
    with pytest.raises(ConcurrencyConflict) as behind:
        engine.ingest(obs(value="airline:HO"), expected_version=1)
    assert "another writer appended first" in behind.value.message
