"""A seeded run of the whole engine: one seed fixes the clock, the ids, the salts, the faults and
the operation mix, so a failing seed replays the same run, byte for byte.

``simulate(seed)`` runs a workload plan through an ``Engine`` over a ``FaultyStore``; a client
retries what it may retry (``workload.RETRIED``) after an injected failure. It then checks the
store like the crash harness does (log shape, SQLite integrity, projections equal a rebuild,
every acknowledged ingest stored once, every logged decision replays) and returns the log's
bytes, so that two runs of one seed can be compared.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from memkg import Engine, FrozenClock, MemkgError, MemoryDecisionLog, SqliteDecisionLog, StoreError
from memkg.events.memory import MemoryEventStore
from memkg.events.sqlite import SqliteEventStore
from memkg.events.store import EventStore
from support import workload
from support.crash import store_problems, stored_once
from support.faults import FaultyStore

RATES = {"fail": 0.04, "lost_ack": 0.04, "duplicate": 0.04, "delay": 0.04}
MIX = {**workload.WEIGHTS, "erase_audit": 1}


@dataclass
class Simulation:
    seed: int
    log: bytes = b""
    operations: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    unreplayable: int = 0
    """Decisions not replayed: their state held facts later erased by audit id."""


def simulate(
    seed: int, count: int = 150, *, path: Path | None = None,
    rates: dict[str, float] | None = None, strict: bool = False,
) -> Simulation:  # fmt: skip
    """Run ``count`` operations of ``seed``'s plan; on SQLite at ``path``, else in memory.

    ``strict``: also replay decisions made before an erasure by audit id (one that saw a key
    frozen for a review the erasure removed does not replay exactly).
    """
    rng = random.Random(seed)
    slept: list[float] = []
    inner: EventStore = MemoryEventStore() if path is None else SqliteEventStore(path)
    store = FaultyStore(inner, rates=RATES if rates is None else rates, rng=rng,
                        sleep=slept.append, salt=seed.to_bytes(8, "big"))  # fmt: skip
    log = MemoryDecisionLog() if path is None else SqliteDecisionLog(path)
    clock = FrozenClock(workload.T0, seed=seed % 2**40)
    run = Simulation(seed)
    purged: dict[str, int] = {}
    """user → the log head when facts of theirs were last erased by audit id"""
    acked: dict[str, tuple[str, str]] = {}
    """source ref of each acknowledged ingest → its user and audit id"""
    notes: dict[str | None, str] = {}
    with Engine(store, clock=clock, decision_log=log) as engine:
        for op in workload.plan(seed, count, weights=MIX):
            for _attempt in range(3):
                try:
                    ack = workload.run(engine, clock, op)
                except StoreError as exc:
                    if not exc.message.startswith("injected fault") or op.kind not in (
                        workload.RETRIED
                    ):
                        break
                    continue  # a client retries what it safely can
                except MemkgError:
                    break
                run.operations += 1
                if op.kind == "ingest":
                    audit = op.args["observation"]["provenance"]["audit_log_id"]
                    acked[f"op-{op.index}"] = (op.user, audit)
                elif op.kind == "note" and "note" in ack:
                    notes[ack["note"]] = op.user
                elif op.kind == "erase":
                    acked = {ref: (u, a) for ref, (u, a) in acked.items() if u != op.user}
                    notes = {note: u for note, u in notes.items() if u != op.user}
                elif op.kind == "erase_audit":
                    acked = {ref: (u, a) for ref, (u, a) in acked.items() if a != op.args["audit"]}
                    purged.update(dict.fromkeys(ack["users"], store.head()))
                break
        events = list(store.read_all())
        run.problems = store_problems(engine, events, path, purged=set(purged))
        run.problems += stored_once(events, list(acked))
        saved = {e.fact_id for e in events if e.type.value == "note.saved"}
        run.problems += [f"note {n} acknowledged, not stored" for n in notes if n not in saved]
        for user in store.users():
            for decision in engine.decisions(user):
                if not strict and decision.as_of_seq <= purged.get(user, 0):
                    run.unreplayable += 1  # made on facts since erased by audit id
                    continue
                replay = engine.replay(decision.decision_id)
                if not replay.reproduced:
                    run.problems.append(f"{decision.decision_id}: {replay.differences[:2]}")
        run.log = b"".join(orjson.dumps(e.model_dump(mode="json")) + b"\n" for e in events)
    run.faults = store.injected
    return run
