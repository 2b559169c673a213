"""A seeded mix of engine operations, the same in every process that generates it.

``plan(seed, count)`` lists the operations; ``run(engine, op)`` performs one through the public
API and returns its acknowledgement (a JSON-able dict). The crash harness runs a plan in a child
process it kills; the simulation runs one in-process over a faulty store. User ids and note
texts carry a marker (``MARK``) so that a byte scan can look for an erased subject.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memkg import Engine, FactStatus, FrozenClock

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
MARK = "Qx7v"
"""Appears in every user id and note of a plan (never in the shipped data)."""
AIRLINES = ("airline:MU", "airline:CA", "airline:CZ", "airline:HO")
CITIES = ("city:shanghai", "city:beijing", "city:tokyo")
RETRIED = frozenset({"ingest", "erase", "consolidate"})
"""Kinds a client may simply run again after a crash: they are idempotent (idempotency key,
erasure, consolidation reruns change nothing). The others are not retried once in flight."""

WEIGHTS = {
    "ingest": 10,
    "confirm": 2,
    "signal": 3,
    "decide": 3,
    "note": 2,
    "consolidate": 1,
    "erase": 1,
    "erase_audit": 0,
}


@dataclass(frozen=True)
class Op:
    index: int
    kind: str
    user: str
    args: dict[str, Any] = field(default_factory=dict)


def user_id(seed: int, slot: int, generation: int) -> str:
    return f"{MARK}-{seed}-u{slot}g{generation}"


def plan(
    seed: int, count: int, *, users: int = 3, weights: dict[str, int] | None = None,
    first: int = 0,
) -> list[Op]:  # fmt: skip
    """``count`` operations drawn from ``seed``; an erased user's slot moves to a new id.

    Operations are numbered from ``first``: plans that share a store need disjoint numbers
    (an operation's number is its clock second, hence its ids).
    """
    rng = random.Random(seed)
    mix = weights or WEIGHTS
    kinds, odds = list(mix), list(mix.values())
    generations = [0] * users
    ops: list[Op] = []
    for index in range(first, first + count):
        kind = rng.choices(kinds, odds)[0]
        slot = rng.randrange(users)
        user = user_id(seed, slot, generations[slot])
        session = f"s{generations[slot]}-{index // 40}"
        args: dict[str, Any] = {"session": session}
        if kind == "ingest":
            args["observation"] = _observation(rng, index, user, session)
        elif kind == "signal":
            args["signal"] = rng.choice(["mention", "correction", "ignored", "rejected"])
        elif kind == "decide":
            args["context"] = {"airline": rng.choice(AIRLINES)}
        elif kind == "note":
            seat = rng.choice(["window", "aisle"])
            args["text"] = f"Prefers {seat} seats on flight {MARK}{index} please"
        elif kind == "erase":
            generations[slot] += 1
        elif kind == "erase_audit":
            args["audit"] = f"audit-{user}-{rng.randrange(3)}"
        ops.append(Op(index, kind, user, args))
    return ops


def _observation(rng: random.Random, index: int, user: str, session: str) -> dict[str, Any]:
    choice = rng.randrange(5)
    key, value = {
        0: ("airline.preferred", rng.choice(AIRLINES)),
        1: ("seat.preference", rng.choice(["window", "aisle", "middle"])),
        2: ("location.city", rng.choice(CITIES)),
        3: ("airline.avoided", [rng.choice(AIRLINES)]),
        4: ("cabin.class", rng.choice(["economy", "business"])),
    }[choice]
    observation: dict[str, Any] = {
        "user_id": user,
        "domain": "travel",
        "key": key,
        "value": value,
        "source": rng.choice(["dialogue", "behavior", "profile"]),
        "confidence": rng.choice([0.6, 0.8, 0.95]),
        "idempotency_key": f"op-{index}",
        "provenance": {"source_ref": f"op-{index}", "audit_log_id": f"audit-{user}-{index % 3}"},
    }
    if rng.random() < 0.25:
        observation.update(scope="session", session_id=session)
    return observation


def clock_for(op: Op) -> datetime:
    """Each operation runs at its own second: ids never repeat across restarts."""
    return T0 + timedelta(seconds=op.index)


def run(engine: Engine, clock: FrozenClock, op: Op) -> dict[str, Any]:
    """Perform ``op``; return what the engine acknowledged (``skipped`` when it did not apply)."""
    clock.set(clock_for(op))
    ack: dict[str, Any] = {"i": op.index, "kind": op.kind, "user": op.user}
    if op.kind == "ingest":
        result = engine.ingest(op.args["observation"])
        ack.update(fact=result.fact_id, event=result.event_id, duplicate=result.duplicate)
    elif op.kind == "confirm":
        pending = sorted(f.id for f in engine.memory(op.user).facts.values()
                         if f.status is FactStatus.PENDING_CONFIRMATION)  # fmt: skip
        if not pending:
            return {**ack, "skipped": True}
        event = engine.confirm(op.user, pending[0])
        ack.update(fact=pending[0], event=event.event_id)
    elif op.kind == "signal":
        held = [f.value for f in engine.facts(op.user, "travel") if f.key == "airline.preferred"]
        if not held:
            return {**ack, "skipped": True}
        event = engine.signal(op.user, "travel", "airline.preferred", held[0], op.args["signal"])
        ack.update(event=event.event_id)
    elif op.kind == "decide":
        decision = engine.decide(op.user, "travel", op.args["context"])
        ack.update(decision=decision.decision_id, action=decision.result.action,
                   trace=decision.trace_id)  # fmt: skip
    elif op.kind == "note":
        note = engine.save_memory_note(op.user, "travel", op.args["text"], "session",
                                       session_id=op.args["session"])  # fmt: skip
        if not note.saved:
            return {**ack, "skipped": True, "reason": note.reason}
        ack.update(note=note.id)
    elif op.kind == "consolidate":
        report = engine.consolidate(op.user, "travel", op.args["session"]).result(timeout=60)
        ack.update(consolidation=report.consolidation_id, events=list(report.events))
    elif op.kind == "erase":
        receipt = engine.erase(op.user)
        ack.update(events=receipt.removed.get("events", 0))
    elif op.kind == "erase_audit":
        receipts = engine.erase_audit_id(op.args["audit"])
        ack.update(users=[r.user_id for r in receipts])
    return ack
