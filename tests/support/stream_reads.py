"""Reads of an engine's event stream, counted: what a cost that must not grow with history
reads, asserted as counts rather than timed."""

from __future__ import annotations

from typing import Any

import pytest

from memkg import Engine


def stream_reads(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the number of events each ``read_stream`` of ``engine``'s store hands
    over, one entry per read (cleared by the caller between steps)."""
    read: list[int] = []
    real = engine.store.read_stream

    def counted(user_id: str, *args: Any, **kwargs: Any) -> Any:
        found = real(user_id, *args, **kwargs)
        read.append(len(found))
        return found

    monkeypatch.setattr(engine.store, "read_stream", counted)
    return read
