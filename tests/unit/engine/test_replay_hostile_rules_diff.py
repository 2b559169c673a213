"""``Engine.rules_diff`` refuses a replay count, a user or an allow list it cannot use with a
memkg error that names the argument, on every decision log, and changes nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.errors import InvalidOperation, MemkgError

AVOIDED = {"airline": "airline:MU"}


@pytest.fixture(params=["memory", "sqlite"])
def logged(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Iterator[Engine]:
    engine = Engine(clock=clock) if request.param == "memory" else Engine.open(
        tmp_path / "m.db", clock=clock)  # fmt: skip
    with engine:
        engine.ingest({"user_id": "li", "domain": "travel", "key": "airline.avoided",
                       "value": ["airline:MU"], "source": "dialogue",
                       "confidence": 0.9})  # fmt: skip
        engine.decide("li", "travel", AVOIDED)
        engine.decide("wu", "travel", AVOIDED)
        yield engine


def _stored(engine: Engine) -> tuple[Any, ...]:
    return (engine.version("li"), engine.version("wu"),
            [d.model_dump_json() for d in engine.decisions("li")],
            [d.model_dump_json() for d in engine.decisions("wu")])  # fmt: skip


@pytest.mark.parametrize(
    "replay", [True, False, 2.5, 2.0, "5", -1, -(2**70), [3]],
)
def test_a_replay_count_that_is_not_a_whole_number_from_0_is_refused(
    logged: Engine, replay: object
) -> None:
    before = _stored(logged)
    for user in (None, "li"):
        with pytest.raises(InvalidOperation) as refused:
            logged.rules_diff(replay=replay, user=user)  # type: ignore[arg-type]
        assert "replay" in refused.value.message and "whole number" in refused.value.message
        assert refused.value.code == "usage"  # the CLI's exit status 2
    assert _stored(logged) == before


@pytest.mark.parametrize("replay", [2**63, 10**30])
def test_a_replay_count_past_every_log_replays_them_all(logged: Engine, replay: int) -> None:
    assert logged.rules_diff(replay=replay).counts["replayed"] == 2
    assert logged.rules_diff(replay=replay, user="li").counts["replayed"] == 1


@pytest.mark.parametrize(
    ("allow", "said"),
    [("travel/booking", "not one string"), (None, "not None"), ([5], "5"),
     (["travel", 5], "5"), ({"travel": 1, 2: 3}, "2")],
)  # fmt: skip
def test_an_allow_list_that_is_not_names_is_refused(
    logged: Engine, allow: object, said: str
) -> None:
    with pytest.raises(InvalidOperation) as refused:
        logged.rules_diff(replay=5, allow=allow)  # type: ignore[arg-type]
    assert refused.value.code == "argument.type"
    assert refused.value.message.startswith("allow ") and said in refused.value.message


def test_an_allow_list_of_names_still_works(logged: Engine) -> None:
    assert logged.rules_diff(replay=5, allow=("travel/booking",)).verdict == "PASS"
    assert logged.rules_diff(replay=5, allow=frozenset({"travel"})).verdict == "PASS"


@pytest.mark.parametrize(
    ("bundle", "code", "said"),
    [(5, "argument.type", "not 5"), (b"rules", "argument.type", "not b'rules'"),
     (["rules"], "argument.type", "not ['rules']"), ("", "argument.type", "not an empty path"),
     ("rules\x00", "text.nul", "NUL"), ("rules\udcff", "text.invalid_unicode", "surrogate")],
)  # fmt: skip
@pytest.mark.parametrize("side", ["old", "new"])
def test_a_bundle_that_is_not_a_folder_is_refused(
    logged: Engine, bundle: object, code: str, said: str, side: str
) -> None:
    before = _stored(logged)
    with pytest.raises(InvalidOperation) as refused:
        logged.rules_diff(**{side: bundle}, replay=5)  # type: ignore[arg-type]
    assert refused.value.code == code
    assert refused.value.message.startswith(side) and said in refused.value.message
    refused.value.message.encode("utf-8")  # a message any client can be sent
    assert _stored(logged) == before


@pytest.mark.parametrize("user", ["", "li ", "li\n", " li", "-li", "l" * 129, "李"])
def test_a_user_that_is_not_a_user_id_is_refused_not_passed_with_nothing_replayed(
    logged: Engine, user: str
) -> None:
    for replay in (None, 5):
        with pytest.raises(MemkgError) as refused:
            logged.rules_diff(replay=replay, user=user)
        assert refused.value.code == "argument.type"
        assert "is not a user id" in refused.value.message
    assert logged.rules_diff(replay=None, user="nobody").counts["replayed"] == 0
