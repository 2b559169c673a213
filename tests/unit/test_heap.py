"""``memkg.heap.settle``: what start-up loaded leaves the collector's walks, and nothing else
changes (objects made later are collected as before)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from memkg.heap import settle


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test run walks everything again


@pytest.mark.usefixtures("thawed")
def test_settle_takes_what_is_alive_out_of_full_collections() -> None:
    loaded = [{"rule": n, "tests": [n, n + 1]} for n in range(20_000)]  # long-lived start-up
    before = len(gc.get_objects())
    frozen = settle()
    assert frozen >= len(loaded)
    assert len(gc.get_objects()) <= before - len(loaded)  # what a full collection walks
    assert loaded[-1]["tests"] == [19_999, 20_000]  # frozen objects are untouched


@pytest.mark.usefixtures("thawed")
def test_cycles_made_after_settle_are_still_collected() -> None:
    settle()
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None
