"""Injected time and ids: unique and ordered even past a million ids in one millisecond."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

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


_RFC4648_TO_CROCKFORD = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz"
)


def _reference_digits(ms: int, counter: int, rand: int) -> str:
    """The digits as first written: 110 bits through RFC 4648 base 32, then Crockford's."""
    bits = (ms % 2**50) << 60 | counter << 40 | rand
    return base64.b32encode(bits.to_bytes(15, "big"))[2:].translate(_RFC4648_TO_CROCKFORD).decode()


@given(st.integers(-(2**52), 2**52), st.integers(0, 32**4 - 1), st.integers(0, 2**40 - 1))
def test_id_digits_equal_the_base32_encoding(ms: int, counter: int, rand: int) -> None:
    assert _id_digits(ms, counter, rand) == _reference_digits(ms, counter, rand)


@given(
    st.lists(st.integers(0, 5), min_size=1, max_size=60),
    st.binary(min_size=5, max_size=5),
    st.integers(1, 6),
)
def test_a_mint_gives_the_ids_it_always_gave(
    steps: list[int], entropy: bytes, limit: int
) -> None:
    """Ids of a frozen and a moving clock, with the counter running out: equal, id for id, to
    the digits of the milliseconds, counter and entropy each id stands for."""
    mint = _IdMint(entropy=entropy, counter_limit=limit)
    at = datetime(2026, 5, 1, tzinfo=UTC)
    last_ms, counter = -1, 0
    for step in steps:
        if step:  # 0: the same instant again, the same object
            at = at + timedelta(microseconds=700 * step)
        ms = int(at.timestamp() * 1000)
        if ms <= last_ms:
            ms, counter = last_ms, counter + 1
            if counter >= limit:
                ms = last_ms = last_ms + 1
                counter = 0
        else:
            last_ms, counter = ms, 0
        expected = "fact_" + _reference_digits(ms, counter, int.from_bytes(entropy, "big"))
        assert mint.mint("fact", at) == expected


def test_random_ids_have_the_format_and_order() -> None:
    mint = _IdMint()
    at = datetime(2026, 5, 1, tzinfo=UTC)
    ids = [mint.mint("evt", at + timedelta(milliseconds=i // 3)) for i in range(30)]
    assert all(len(i) == len("evt_") + 22 for i in ids)
    assert [i[:18] for i in ids] == sorted(i[:18] for i in ids)  # time and counter order them
    assert len(set(ids)) == 30
