"""Several engine processes on one PostgreSQL schema: a workload, its history and the checker.

An *actor* runs a seeded sequence of operations (ingest, confirm, signal, decide) on a shared
set of users, either through the library (``Engine.connect``) or over HTTP against a
``memkg serve`` replica, and records each one: what it was, when it began and was
acknowledged (``time.monotonic``, one clock for every process of the machine) and what came
back. ``check`` then reads the log and says what, if anything, went wrong.

``python -m support.replicas DSN SCHEMA NAME SEED COUNT USERS`` runs one library actor: it
says ``ready`` on standard error, reads the instant to begin (``time.time()``) from standard
input, and prints its history as JSON lines (the multi-process test and the benchmark run it).
"""

from __future__ import annotations

import json
import random
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

CONSENT = {"consent_granted": True, "consent_version": "v1"}
AIRLINES = ["airline:CA", "airline:MU", "airline:CZ", "airline:HO", "airline:SQ"]
RACED = frozenset({"signal.no_edge", "fact.not_pending"})
"""Refusals of an operation's second step that only concurrency explains: another writer
superseded the airline before its mention, or the pending fact before its confirmation."""


@dataclass
class Op:
    actor: str
    kind: str
    user: str
    start: float
    end: float = 0.0
    ok: bool = False
    error: str | None = None
    fact_id: str | None = None
    event_id: str | None = None
    seq: int | None = None
    version: int | None = None
    decision_id: str | None = None
    as_of_seq: int | None = None
    second_event: str | None = None
    second_version: int | None = None


@dataclass
class Verdict:
    ops: int = 0
    writes: int = 0
    decisions: int = 0
    surfaced_conflicts: int = 0
    problems: list[str] = field(default_factory=list)


def plan(seed: int, count: int, users: int) -> list[tuple[str, str, Any]]:
    """The actor's operations: (kind, user, value), the same for the same seed."""
    rng = random.Random(seed)
    kinds = ["age"] * 4 + ["airline"] * 2 + ["pending"] * 2 + ["signal"] + ["decide"] * 3
    found = []
    for _ in range(count):
        kind = rng.choice(kinds)
        value: Any = rng.randint(1, 17) if kind in ("age", "pending") else rng.choice(AIRLINES)
        # half the operations go to a tenth of the users, so writers do meet on one stream
        user = rng.randrange(max(1, users // 10)) if rng.random() < 0.5 else rng.randrange(users)
        found.append((kind, f"user{user:03d}", value))
    return found


def _age(user: str, value: Any, source: str) -> dict[str, Any]:
    return {"user_id": user, "domain": "health", "key": "child.age", "value": value,
            "source": source, "confidence": 0.9, "provenance": CONSENT}  # fmt: skip


def _airline(user: str, value: Any) -> dict[str, Any]:
    return {"user_id": user, "domain": "travel", "key": "airline.preferred", "value": value,
            "source": "dialogue", "confidence": 0.8}  # fmt: skip


def _observation(kind: str, user: str, value: Any) -> dict[str, Any]:
    if kind == "airline":
        return _airline(user, value)
    return _age(user, value, "dialogue" if kind == "pending" else "profile")


class LibraryActor:
    """Operations through an ``Engine`` (a library worker)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def run(self, op: Op, value: Any) -> None:
        from memkg.errors import MemkgError

        e = self.engine
        try:
            if op.kind == "decide":
                made = e.decide(op.user, "health", {"symptom": "fever"})
                op.decision_id, op.as_of_seq = made.decision_id, made.as_of_seq
            elif op.kind == "signal":  # the airline, then a mention of it
                result = e.ingest(_airline(op.user, value))
                op.fact_id, op.event_id = result.fact_id, result.event_id
                op.seq, op.version = result.seq, result.version
                event = e.signal(op.user, "travel", "airline.preferred", value, "mention")
                op.second_event, op.second_version = event.event_id, event.version
            else:
                result = e.ingest(_observation(op.kind, op.user, value))
                op.fact_id, op.event_id = result.fact_id, result.event_id
                op.seq, op.version = result.seq, result.version
                if op.kind == "pending":
                    event = e.confirm(op.user, result.fact_id)
                    op.second_event, op.second_version = event.event_id, event.version
            op.ok = True
        except MemkgError as exc:
            op.error = exc.code


class HttpActor:
    """The same operations over HTTP against one ``memkg serve --no-auth`` replica."""

    def __init__(self, base: str) -> None:
        self.base = base

    def _call(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method=method,
            headers={"content-type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.load(error)

    def run(self, op: Op, value: Any) -> None:
        user = f"/v1/users/{op.user}"
        if op.kind == "decide":
            fever = {"domain": "health", "context": {"symptom": "fever"}}
            status, out = self._call("POST", f"{user}/decisions", fever)
            if status == 201:
                op.decision_id, op.as_of_seq = out["decision_id"], out["as_of_seq"]
        elif op.kind == "signal":  # the airline, then a mention of it
            status, out = self._call("POST", "/v1/observations", _airline(op.user, value))
            if status == 201:
                op.fact_id, op.event_id = out["fact_id"], out["event_id"]
                op.seq, op.version = out["seq"], out["version"]
                body = {"key": "airline.preferred", "value": value, "kind": "mention",
                        "domain": "travel"}  # fmt: skip
                status, out = self._call("POST", f"{user}/signals", body)
                if status == 201:
                    op.second_event, op.second_version = out["event_id"], out["version"]
        else:
            obs = _observation(op.kind, op.user, value)
            status, out = self._call("POST", "/v1/observations", obs)
            if status == 201:
                op.fact_id, op.event_id = out["fact_id"], out["event_id"]
                op.seq, op.version = out["seq"], out["version"]
                if op.kind == "pending":
                    status, out = self._call("POST", f"{user}/facts/{op.fact_id}/confirm",
                                             {"by": "user"})  # fmt: skip
                    if status == 200:
                        op.second_event, op.second_version = out["event_id"], out["version"]
        op.ok = status in (200, 201)
        if not op.ok:
            op.error = str(out.get("error", status))


def run_actor(name: str, actor: Any, seed: int, count: int, users: int) -> list[Op]:
    history = []
    for kind, user, value in plan(seed, count, users):
        op = Op(actor=name, kind=kind, user=user, start=time.monotonic())
        actor.run(op, value)
        op.end = time.monotonic()
        history.append(op)
    return history


def check(history: Iterable[Op], events: Callable[[str], list[Any]],
          replayed: Callable[[str], bool]) -> Verdict:  # fmt: skip
    """What the history and the log say: every problem found, and the counts.

    An operation is acknowledged when it returned without an error; one whose second step was
    refused for a reason only concurrency explains (``RACED``) acknowledges its first write.

    1. every acknowledged write is in the log exactly once (its event ids);
    2. each user's stream versions run 1..n, and each actor saw its own versions rise;
    3. no decision missed a write acknowledged before it began: its log position is at or
       after that write, and replaying it (state as of that position) gives the same record,
       so a decision made on a stale projection would not reproduce;
    4. ``store.conflict`` reaching the caller of an unconditional write is counted.
    """
    ops = list(history)
    verdict = Verdict(ops=len(ops))
    by_user: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        by_user[op.user].append(op)
    for user, mine in sorted(by_user.items()):
        log = events(user)
        ids = [e.event_id for e in log]
        if [e.version for e in log] != list(range(1, len(log) + 1)):
            verdict.problems.append(f"{user}: versions {[e.version for e in log]} are not 1..n")
        if len(set(ids)) != len(ids):
            verdict.problems.append(f"{user}: an event is stored twice")
        stored = {e.event_id: e for e in log}
        facts = defaultdict(int)
        for e in log:
            if e.type.value == "fact.asserted":
                facts[e.fact_id] += 1
        seen: dict[str, int] = {}
        for op in sorted(mine, key=lambda o: o.start):
            if op.kind != "decide":
                verdict.writes += 1
                if op.error == "store.conflict":
                    verdict.surfaced_conflicts += 1
            if not op.ok and op.error not in RACED:
                continue
            for event_id in filter(None, (op.event_id, op.second_event)):
                if event_id not in stored:
                    verdict.problems.append(f"{user}: acknowledged {op.kind} {event_id} lost")
            if op.fact_id is not None and facts.get(op.fact_id) != 1:
                verdict.problems.append(
                    f"{user}: fact {op.fact_id} stored {facts.get(op.fact_id, 0)} times"
                )
            for version in filter(None, (op.version, op.second_version)):
                if version <= seen.get(op.actor, 0):
                    verdict.problems.append(
                        f"{user}: {op.actor} saw version {version} after {seen[op.actor]}"
                    )
                seen[op.actor] = version
        decisions = [o for o in mine if o.kind == "decide" and o.ok]
        writes = [o for o in mine if o.kind != "decide" and o.seq is not None
                  and (o.ok or o.error in RACED)]  # fmt: skip
        for d in decisions:
            verdict.decisions += 1
            before = [w for w in writes if w.end < d.start]
            late = [w for w in before if (w.seq or 0) > (d.as_of_seq or 0)]
            if late:
                verdict.problems.append(
                    f"{user}: decision {d.decision_id} at {d.as_of_seq} missed {late[0].event_id}"
                )
            if d.decision_id is not None and not replayed(d.decision_id):
                verdict.problems.append(f"{user}: decision {d.decision_id} does not replay")
    return verdict


def history_json(history: Iterable[Op]) -> str:
    return "\n".join(json.dumps(asdict(op)) for op in history)


def history_from(text: str) -> list[Op]:
    return [Op(**json.loads(line)) for line in text.splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    dsn, schema, name, seed, count, users = argv
    from memkg import Engine

    with Engine.connect(dsn, schema=schema) as engine:
        engine.registry, engine.validator  # noqa: B018 (loaded before the start line)
        print("ready", file=sys.stderr, flush=True)
        start = float(sys.stdin.readline())  # the wall-clock instant every actor begins
        time.sleep(max(0.0, start - time.time()))
        history = run_actor(name, LibraryActor(engine), int(seed), int(count), int(users))
        print(json.dumps({"conflicts": engine.conflicts.retried}), file=sys.stderr)
    print(history_json(history))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
