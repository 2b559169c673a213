"""Injected time and ids: unique and ordered even past a million ids in one millisecond."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memkg import FrozenClock
from memkg.clock import _id_digits, _IdMint


def test_ids_stay_unique_and_ordered_past_the_per_millisecond_counter() -> None:
    mint = _IdMint(entropy=b"\0" * 5, counter_limit=4)
    at = datetime(2026, 5, 1, tzinfo=UTC)
    ids = [mint.mint("fact", at) for _ in range(20)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    millis = [i[len("fact_") : len("fact_") + 10] for i in ids]
    assert millis[4] > millis[3]  # the counter ran out: the next millisecond was borrowed
    assert len(set(millis)) == 5


def test_frozen_clock_ids_are_deterministic() -> None:
    at = datetime(2026, 5, 1, tzinfo=UTC)
    first, second = FrozenClock(at), FrozenClock(at)
    assert [first.new_id("x") for _ in range(3)] == [second.new_id("x") for _ in range(3)]


@given(st.integers(0, 2**50 - 1), st.integers(0, 32**4 - 1), st.integers(0, 2**40 - 1))
def test_id_digits_are_milliseconds_counter_and_randomness_in_crockford_base_32(
    ms: int, counter: int, rand: int
) -> None:
    def digits(number: int, length: int) -> str:
        return "".join(
            "0123456789abcdefghjkmnpqrstvwxyz"[number >> 5 * i & 31]
            for i in reversed(range(length))
        )

    assert _id_digits(ms, counter, rand) == digits(ms, 10) + digits(counter, 4) + digits(rand, 8)
