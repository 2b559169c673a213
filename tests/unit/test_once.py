"""``once``: a part built on first use is built once, however many threads ask at once."""

from __future__ import annotations

import threading
from pathlib import Path

from memkg import Engine
from memkg.once import once


class _Part:
    def __init__(self, threads: int) -> None:
        self.builds = 0
        self.asked = threading.Barrier(threads)

    @once
    def slow(self) -> object:
        """A build that lets every other thread ask before it ends."""
        self.builds += 1
        threading.Event().wait(0.05)  # the other threads arrive while this one builds
        return object()

    @once
    def uses_slow(self) -> tuple[object, int]:
        """A build that reads another part of the same object (the lock is reentrant)."""
        return self.slow, self.builds


def _ask_at_once(threads: int, ask: object) -> list[object]:
    got: list[object] = []
    lock = threading.Lock()

    def run() -> None:
        value = ask()  # type: ignore[operator]
        with lock:
            got.append(value)

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=30)
    return got


def test_threads_asking_first_at_once_get_one_part_built_once() -> None:
    part = _Part(8)

    def ask() -> object:
        part.asked.wait()
        return part.slow

    got = _ask_at_once(8, ask)
    assert len(got) == 8 and all(value is got[0] for value in got)
    assert part.builds == 1
    assert part.uses_slow == (got[0], 1)
    assert _Part.slow.__doc__ == "A build that lets every other thread ask before it ends."


def test_parts_of_different_objects_are_their_own() -> None:
    first, second = _Part(1), _Part(1)
    assert first.slow is not second.slow
    assert (first.builds, second.builds) == (1, 1)


def test_an_engines_connections_and_validator_are_built_once_for_threads_asking_first(
    tmp_path: Path,
) -> None:
    with Engine.open(tmp_path / "m.db") as engine:
        parts = _ask_at_once(6, lambda: (engine.recalls.vector_store, engine.tracer.traces,
                                         engine.validator, engine.ontology))  # fmt: skip
        assert len(parts) == 6 and all(p == parts[0] for p in parts)
        assert parts[0][0] is engine.recalls.vector_store
