"""The memory switch and merged ids, wired for ``Engine`` (the views are ``memkg.identity``).

Switch events and merge links are appended to the users' own streams here, beside the
write guard (``_writable``) every other write passes; each append drops the cached views it
changes, so the next read folds them anew.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from memkg.errors import InvalidOperation
from memkg.identity import switch_state
from memkg.lifecycle.erasure import ErasureReceipt
from memkg.model.event import EventType, NewEvent
from memkg.model.identity import MemoryState, SwitchMode

if TYPE_CHECKING:
    from memkg.engine import Engine


class SwitchReceipt(BaseModel):
    """What turning memory off or on did: the state of each id, and the erasure if any."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    states: tuple[MemoryState, ...]
    erasure: ErasureReceipt | None = None


def memory_state(engine: Engine, user_id: str) -> MemoryState:
    return switch_state(user_id, engine.store.read_stream(user_id))


def _mode(mode: str | SwitchMode) -> SwitchMode:
    try:
        return SwitchMode(mode)
    except ValueError:
        raise InvalidOperation(
            f"mode {mode!r} is not one of keep, erase: keep freezes memory as it is, erase "
            "erases it", code="memory.mode",
        ) from None  # fmt: skip


def _words(by: str, reason: str) -> None:
    if not by.strip() or len(by) > 128 or len(reason) > 500:
        raise InvalidOperation(
            "give who asked (`by`, 1-128 characters) and a reason of at most 500 characters",
            code="memory.by",
        )


def _append(engine: Engine, user_id: str, kind: EventType, payload: dict[str, Any]) -> None:
    """One switch event in the user's own stream; every view that reads the stream is dropped."""
    event = NewEvent(event_id=engine.clock.new_id("evt"), type=kind, user_id=user_id,
                     domain=None, payload=payload, recorded_at=engine.clock.now())  # fmt: skip
    engine.store.append(user_id, [event], expected_version=engine.store.stream_version(user_id))
    engine._forget_joined(user_id)
    engine._forget(user_id)


def disable_memory(
    engine: Engine, user_id: str, *, mode: str | SwitchMode = SwitchMode.KEEP,
    by: str = "user", reason: str = "",
) -> SwitchReceipt:  # fmt: skip
    """Turn memory off for the user and every id merged with them.

    ``keep``: memory is frozen as it is; ``erase``: it is erased first (as ``erase`` does) and
    the new stream holds only the switch event, with no personal data: the mode and the
    erasure's id. Turning it off again in the same mode changes nothing.
    """
    engine._check_args(user_id=user_id, by=by, reason=reason)
    chosen = _mode(mode)
    _words(by, reason)
    with engine._lock:
        memory = engine.memory(user_id)
        now = memory_state(engine, user_id)
        if not now.enabled and (now.mode is chosen or now.mode is SwitchMode.ERASE):
            return SwitchReceipt(states=(now,))
        ids = (user_id, *memory.merged_ids)
        if chosen is SwitchMode.KEEP:
            for one in ids:
                payload = {"mode": chosen.value, "by": by, "reason": reason,
                           "with": [i for i in ids if i != one]}  # fmt: skip
                _append(engine, one, EventType.MEMORY_DISABLED, payload)
            return SwitchReceipt(states=tuple(memory_state(engine, i) for i in ids))
        receipt = engine.erase(user_id)
        for one in ids:
            payload = {"mode": chosen.value, "erasure_id": receipt.erasure_id}
            _append(engine, one, EventType.MEMORY_DISABLED, payload)
        return SwitchReceipt(states=tuple(memory_state(engine, i) for i in ids), erasure=receipt)


def enable_memory(
    engine: Engine, user_id: str, *, by: str = "user", reason: str = ""
) -> SwitchReceipt:
    """Turn memory back on (an event): kept memory is read again, erased memory starts empty.

    Ids whose memory went off together with this one (merged ids, ``keep``) come back too.
    """
    engine._check_args(user_id=user_id, by=by, reason=reason)
    _words(by, reason)
    with engine._lock:
        events = engine.store.read_stream(user_id)
        now = switch_state(user_id, events)
        if now.enabled:
            return SwitchReceipt(states=(now,))
        last = next(e for e in reversed(events) if e.seq == now.seq)
        ids = (user_id, *last.payload.get("with", ()))
        states = []
        for one in ids:
            if not memory_state(engine, one).enabled:
                _append(engine, one, EventType.MEMORY_ENABLED, {"by": by, "reason": reason})
            states.append(memory_state(engine, one))
        return SwitchReceipt(states=tuple(states))
