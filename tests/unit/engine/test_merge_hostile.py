"""Merges and splits given unusual requests: chains, cycles, oneself, ids that are no user's,
memory off, a split of a merge never made. Each is refused with a code and a message that
says what to do instead, and no stream moves."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memkg import Engine, FrozenClock
from memkg.config import EngineConfig
from memkg.errors import InvalidOperation, MemkgError, MemoryDisabled, NotFound
from support.observations import T0, obs

IDS = ("a", "b", "c", "d")


@pytest.fixture
def engine() -> Engine:
    engine = Engine(clock=FrozenClock(T0), config=EngineConfig(shacl=False))
    for user in IDS:
        engine.ingest(obs(user_id=user, key="seat.preference", value="aisle"))
    return engine


def _merge(engine: Engine, primary: str, other: str) -> None:
    proposal = engine.merge_users(primary, other, by="agent", reason="same booking")
    engine.merge_users(primary, other, by="user", reason="confirmed", confirm=proposal.merge_id)


def _refused(engine: Engine, call: Callable[[], object]) -> MemkgError:
    versions = {user: engine.store.stream_version(user) for user in IDS}
    with pytest.raises(MemkgError) as caught:
        call()
    assert {user: engine.store.stream_version(user) for user in IDS} == versions
    return caught.value


def test_an_id_merged_into_a_primary_cannot_take_the_primary_in(engine: Engine) -> None:
    _merge(engine, "a", "b")
    refused = _refused(engine, lambda: engine.merge_users("b", "a", by="x", reason="cycle"))
    assert refused.code == "merge.conflict"
    assert "'b' is merged into 'a' already" in refused.message
    assert "'a' into 'a'" not in refused.message


@pytest.mark.parametrize(
    ("primary", "other", "says"),
    [
        ("b", "c", "merge 'c' into 'a' instead"),  # a chain: b is a's
        ("c", "a", "merge 'c' into 'a', or split"),  # a has ids merged into it
        ("c", "b", "'b' is merged into 'a' already"),  # b is someone else's
    ],
)
def test_chains_are_refused_with_the_merge_that_would_do(
    engine: Engine, primary: str, other: str, says: str
) -> None:
    _merge(engine, "a", "b")
    refused = _refused(engine, lambda: engine.merge_users(primary, other, by="x", reason="r"))
    assert refused.code == "merge.conflict" and says in refused.message


@pytest.mark.parametrize("user", ["bad id", "a\nb", "x" * 129, "", "-a", "a/b", "é", "a>b"])
def test_merge_and_split_ids_are_user_ids(engine: Engine, user: str) -> None:
    for call in (
        lambda: engine.merge_users("a", user, by="x", reason="r"),
        lambda: engine.merge_users(user, "a", by="x", reason="r"),
        lambda: engine.split_users("a", user, by="x", reason="r"),
        lambda: engine.split_users(user, "a", by="x", reason="r"),
    ):
        refused = _refused(engine, call)
        assert isinstance(refused, InvalidOperation) and refused.code == "merge.user_id"
        assert len(refused.message) < 400
    if user:  # no stream was started for the id
        assert engine.store.stream_version(user) == 0


def test_oneself_and_a_split_never_made_are_refused(engine: Engine) -> None:
    assert _refused(engine, lambda: engine.merge_users("a", "a", by="x", reason="r")).code == (
        "merge.same")  # fmt: skip
    refused = _refused(engine, lambda: engine.split_users("c", "d", by="x", reason="r"))
    assert isinstance(refused, NotFound) and refused.code == "merge.not_found"
    engine.merge_users("c", "d", by="x", reason="proposed, never confirmed")
    refused = _refused(engine, lambda: engine.split_users("c", "d", by="x", reason="r"))
    assert refused.code == "merge.not_found"


@pytest.mark.parametrize("mode", ["keep", "erase"])
def test_an_id_with_memory_off_is_not_merged(engine: Engine, mode: str) -> None:
    engine.disable_memory("b", mode=mode)
    refused = _refused(engine, lambda: engine.merge_users("a", "b", by="x", reason="r"))
    assert isinstance(refused, MemoryDisabled)
    refused = _refused(engine, lambda: engine.merge_users("b", "a", by="x", reason="r"))
    assert isinstance(refused, MemoryDisabled)
