"""The public door: what ``import memkg`` offers is deliberate, sorted and pinned."""

from __future__ import annotations

import memkg


def test_all_is_sorted_and_importable() -> None:
    assert memkg.__all__ == sorted(memkg.__all__)
    for name in memkg.__all__:
        assert hasattr(memkg, name), name


def test_core_names_are_exported() -> None:
    core = {
        "Engine",
        "EngineConfig",
        "Fact",
        "Observation",
        "ValidationFailed",
        "MemkgError",
        "ConcurrencyConflict",
        "FrozenClock",
        "ErasureReceipt",
        "EventStore",
    }
    assert core <= set(memkg.__all__)


def test_every_error_subclasses_the_root_and_has_a_code() -> None:
    errors = [
        getattr(memkg, n)
        for n in memkg.__all__
        if n.endswith(("Error", "Failed", "Conflict", "NotFound", "Operation"))
    ]
    assert errors
    for error in errors:
        assert issubclass(error, memkg.MemkgError), error
        assert isinstance(error.code, str) and error.code
