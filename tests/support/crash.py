"""The crash harness: kill a worker at random points, reopen its store, check what survived.

``CrashHarness(spec, seed, workdir).run(kills)`` forks workers (``support.crash_child``) that run
a workload plan and print each acknowledgement; each is ``SIGKILL``ed after a random number of
acknowledgements plus a random delay (sometimes before it has opened the store). After every
kill the harness opens the store itself and checks:

* the store's integrity (SQLite's ``integrity_check``; for every backend: unique event ids,
  increasing ``seq``, contiguous stream versions that match ``stream_version``);
* every acknowledged operation is present exactly once (an ingest's fact and its one
  ``fact.asserted``, a confirmation, a signal, a note, a consolidation's events, a decision in
  the log; an erased user has no event and no decision left), and an operation cut off in
  flight is present at most once;
* every user's projection equals the one a rebuild from the whole log gives;
* every logged decision replays exactly.

The next worker retries the operation in flight when a client could (``workload.RETRIED``), and
otherwise goes on with the next one. Problems are collected, not raised, so that a test can
also assert that a broken store is caught.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memkg import Engine, EventType, FrozenClock
from memkg.model.event import Event
from support import workload
from support.stores import open_engine

TESTS = Path(__file__).resolve().parents[1]
_STALL = 120.0
"""Seconds a worker may take to acknowledge its next operation before the run is declared hung."""


@dataclass
class CrashReport:
    backend: str
    kills: int = 0
    operations: int = 0
    """Operations acknowledged (stored or refused) across all workers."""
    retried: int = 0
    replayed: int = 0
    """Logged decisions replayed."""
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"crash[{self.backend}]: {self.kills} kills, {self.operations} operations "
                f"acknowledged, {self.retried} retried, {self.replayed} decisions replayed, "
                f"{len(self.problems)} problems")  # fmt: skip


class CrashHarness:
    def __init__(self, spec: dict[str, Any], seed: int, workdir: Path, *, count: int) -> None:
        self.spec = spec
        self.seed = seed
        self.workdir = workdir
        self.ops = workload.plan(seed, count)
        self.rng = random.Random(seed ^ 0x5EED)
        self.acks: dict[int, dict[str, Any]] = {}
        self.in_flight: set[int] = set()
        self.replayed: set[str] = set()
        label = spec["backend"] + (f"/{spec['store']}" if "store" in spec else "")
        self.report = CrashReport(label)
        self._stderr = workdir / "zygote.err"

    def run(self, kills: int) -> CrashReport:
        path = os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "PYTHONPATH": path}
        with self._stderr.open("w") as err:
            zygote = subprocess.Popen(
                [sys.executable, "-m", "support.crash_child", str(self.seed), str(len(self.ops))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
            )  # fmt: skip
            try:
                start = 0
                for round_ in range(kills):
                    start = self._round(zygote, round_, start)
                    if start >= len(self.ops) or self.report.problems:
                        break
            finally:
                assert zygote.stdin is not None and zygote.stdout is not None
                zygote.stdin.close()
                zygote.wait(timeout=60)
                zygote.stdout.close()
        return self.report

    def _ask(self, zygote: subprocess.Popen[str], command: dict[str, Any]) -> dict[str, Any]:
        assert zygote.stdin is not None and zygote.stdout is not None
        zygote.stdin.write(json.dumps(command) + "\n")
        zygote.stdin.flush()
        line = zygote.stdout.readline()
        if not line:
            raise RuntimeError(f"the crash zygote died: {self._stderr.read_text()[-2000:]}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _round(self, zygote: subprocess.Popen[str], round_: int, start: int) -> int:
        acks_path = self.workdir / f"acks-{round_}.jsonl"
        spec = {**self.spec, "start": start, "acks": str(acks_path)}
        pid = self._ask(zygote, {"run": spec})["pid"]
        target = self.rng.choice([0, 1, 2, 3, 5, 8, 13, 21])
        finished = self._wait_for(acks_path, target)
        if target == 0:
            time.sleep(self.rng.uniform(0.0, 0.3))  # sometimes while it opens the store
        else:
            time.sleep(self.rng.uniform(0.0, 0.02))
        with contextlib.suppress(ProcessLookupError):  # it may have finished by itself
            os.kill(pid, signal.SIGKILL)
        status = self._ask(zygote, {"wait": pid})["status"]
        lines = _lines(acks_path)
        done = any(line.get("done") for line in lines)
        acks = [line for line in lines if "i" in line]
        if status != signal.SIGKILL and not (done or finished):
            tail = self._stderr.read_text()[-2000:]
            self.report.problems.append(f"worker exited with status {status}: {tail}")
        self.report.kills += 1
        self.report.operations += len(acks)
        for ack in acks:
            self.acks[ack["i"]] = ack
            self.in_flight.discard(ack["i"])
        following = acks[-1]["i"] + 1 if acks else start
        if done or following >= len(self.ops):
            following = len(self.ops)
        else:
            self.in_flight.add(following)
            if self.ops[following].kind in workload.RETRIED:
                self.report.retried += 1
            else:
                following += 1
        self.report.problems += [f"after kill {round_ + 1}: {p}" for p in self.check()]
        return following

    def _wait_for(self, path: Path, target: int) -> bool:
        """Wait until the worker acknowledged ``target`` operations; True if it finished."""
        deadline = time.monotonic() + _STALL
        while time.monotonic() < deadline:
            lines = _lines(path)
            if any(line.get("done") for line in lines):
                return True
            if target == 0 or sum("i" in line for line in lines) >= target:
                return False
            time.sleep(0.002)
        self.report.problems.append(f"a worker acknowledged nothing for {_STALL:.0f} s")
        return False

    # -- checks -------------------------------------------------------------------------

    def check(self) -> list[str]:
        with open_engine(self.spec, FrozenClock(workload.T0), checking=True) as engine:
            events = list(engine.store.read_all())
            path = Path(self.spec["where"]) if self.spec["backend"] == "sqlite" else None
            problems = store_problems(engine, events, path)
            problems += self._acknowledged(engine, events)
            problems += self._replays(engine)
        return problems

    def _acknowledged(self, engine: Engine, events: list[Event]) -> list[str]:
        problems: list[str] = []
        ids = Counter(e.event_id for e in events)
        users = {e.user_id for e in events}
        refs = Counter(
            e.payload["fact"]["provenance"].get("source_ref")
            for e in events
            if e.type is EventType.FACT_ASSERTED
        )
        confirmed = Counter(e.fact_id for e in events if e.type is EventType.FACT_CONFIRMED)
        notes = {e.fact_id for e in events if e.type is EventType.NOTE_SAVED}
        named = {a["user"] for a in self.acks.values()}
        # An erasure cut off in flight may have removed the decisions but not yet the events
        # (decisions go first so that a retry still finds the facts): the retry finishes it.
        erasing = {self.ops[i].user for i in self.in_flight if self.ops[i].kind == "erase"}
        erased = {u for u in named if engine.store.was_erased(u)} | erasing
        decided = {d.decision_id for u in named - erased for d in engine.decisions(u)}
        for ref, n in refs.items():
            if n > 1:
                problems.append(f"{n} facts asserted from {ref}: a retry was stored twice")
        for index in sorted(self.in_flight):
            op = self.ops[index]
            if refs[f"op-{index}"] > 1:
                problems.append(f"op {index} (in flight, {op.kind}) stored twice")
        for index, ack in sorted(self.acks.items()):
            user = ack["user"]
            if ack.get("refused") or ack.get("skipped"):
                if ack["kind"] == "ingest" and refs[f"op-{index}"]:
                    problems.append(f"op {index}: ingest refused ({ack['refused']}) yet stored")
                continue
            if ack["kind"] == "erase" or user in erased:
                if ack["kind"] == "erase":
                    if user in users:
                        problems.append(f"op {index}: {user} was erased, events remain")
                    if engine.decision_log.for_user(user):
                        problems.append(f"op {index}: {user} was erased, decisions remain")
                    if not engine.store.was_erased(user):
                        problems.append(f"op {index}: no tombstone for the erasure of {user}")
                continue
            missing = _missing(ack, ids, refs, confirmed, notes, decided)
            if missing:
                problems.append(f"op {index} ({ack['kind']}) acknowledged but {missing}")
        return problems

    def _replays(self, engine: Engine) -> list[str]:
        problems = []
        for user in engine.store.users():
            for decision in engine.decisions(user):
                if decision.decision_id in self.replayed:
                    continue
                replay = engine.replay(decision.decision_id)
                if not replay.reproduced:
                    problems.append(f"decision {decision.decision_id} does not replay: "
                                    f"{list(replay.differences)[:3]}")  # fmt: skip
                self.replayed.add(decision.decision_id)
                self.report.replayed += 1
        return problems


def _missing(
    ack: dict[str, Any], ids: Counter[str], refs: Counter[str | None],
    confirmed: Counter[str | None], notes: set[str | None], decided: set[str],
) -> str | None:  # fmt: skip
    """What of an acknowledged operation is not in the store (None: all of it is)."""
    kind, index = ack["kind"], ack["i"]
    if kind == "ingest":
        if refs[f"op-{index}"] != 1:
            return f"stored {refs[f'op-{index}']} times"
        if not ack["duplicate"] and ids[ack["event"]] != 1:
            return f"event {ack['event']} is missing"
    elif kind == "confirm":
        if ids[ack["event"]] != 1 or confirmed[ack["fact"]] != 1:
            return f"confirmation {ack['event']} of {ack['fact']} is missing or repeated"
    elif kind == "signal":
        if ids[ack["event"]] != 1:
            return f"signal {ack['event']} is missing"
    elif kind == "note":
        if ack["note"] not in notes:
            return f"note {ack['note']} is missing"
    elif kind == "consolidate":
        lost = [e for e in ack["events"] if ids[e] != 1]
        if lost:
            return f"its events {lost} are missing"
    elif kind == "decide" and ack["decision"] not in decided:
        return f"decision {ack['decision']} is not in the log"
    return None


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for raw in path.read_bytes().split(b"\n"):
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue  # the line being written when the worker died
    return out


def store_problems(
    engine: Engine, events: list[Event], path: Path | None, *, purged: set[str] | None = None
) -> list[str]:
    """What is wrong with the store's shape, its SQLite file (``path``) and its projections.

    ``purged``: users some of whose facts were erased by audit id (their streams have gaps).
    """
    problems = _log_shape(engine, events, purged)
    if path is not None:
        problems += _sqlite_integrity(path)
    return problems + _projections(engine)


def stored_once(events: list[Event], source_refs: list[str]) -> list[str]:
    """Each of ``source_refs`` names exactly one asserted fact in ``events``."""
    refs = Counter(
        e.payload["fact"]["provenance"].get("source_ref")
        for e in events
        if e.type is EventType.FACT_ASSERTED
    )
    return [f"{ref} stored {refs[ref]} times" for ref in source_refs if refs[ref] != 1]


def _log_shape(engine: Engine, events: list[Event], purged: set[str] | None) -> list[str]:
    problems = []
    seqs = [e.seq for e in events]
    if seqs != sorted(set(seqs)):
        problems.append("seq is not strictly increasing over the log")
    if len({e.event_id for e in events}) != len(events):
        problems.append("an event id appears twice")
    streams: dict[str, list[int]] = {}
    for event in events:
        streams.setdefault(event.user_id, []).append(event.version)
    for user, versions in streams.items():
        if purged is None and versions != list(range(1, len(versions) + 1)):
            problems.append(f"{user}: stream versions are not 1..{len(versions)}")
        if versions != sorted(set(versions)):
            problems.append(f"{user}: stream versions are not increasing")
        version = engine.store.stream_version(user)
        if version != versions[-1] and not (purged and user in purged and version > versions[-1]):
            problems.append(f"{user}: stream_version disagrees with the last event")
    listed = set(engine.store.users())  # a user whose events were all purged keeps a stream
    if set(streams) - listed or listed - set(streams) - (purged or set()):
        problems.append("users() disagrees with the streams in the log")
    return problems


def _sqlite_integrity(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        found = [r[0] for r in db.execute("PRAGMA integrity_check")]
        keys = db.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        db.close()
    problems = [] if found == ["ok"] else [f"integrity_check: {found[:3]}"]
    return problems + ([f"foreign_key_check: {keys[:3]}"] if keys else [])


def _projections(engine: Engine) -> list[str]:
    """Each user's memory read from its stream equals the one a rebuild of the log folds."""
    users = engine.store.users()
    before = {u: (dict(engine.memory(u).facts), engine.notes(u)) for u in users}
    engine.rebuild()
    problems = []
    for user in users:
        after = (dict(engine.memory(user).facts), engine.notes(user))
        if after != before[user]:
            problems.append(f"{user}: the projection differs from a rebuild of the log")
    return problems
