"""Another engine process on a PostgreSQL schema, driven one request at a time.

``EngineProcess(dsn, schema)`` starts ``python -c CHILD``: an engine of its own (its own
caches, connections and locks), which answers one JSON request per line on standard input
with one JSON line on standard output. ``send`` writes a request, ``answer`` reads its
answer, ``call`` does both. An operation that raised answers ``{"error": code, "message"}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, sys
from datetime import datetime
from memkg import Engine, FrozenClock, MemkgError

dsn, schema, now = sys.argv[1], sys.argv[2], datetime.fromisoformat(sys.argv[3])


def kinds(value):
    # each number's Python type as well as its value: JSON alone would not tell 1e+20 from 10**20
    if isinstance(value, dict):
        return {k: kinds(v) for k, v in value.items()}
    if isinstance(value, list):
        return [kinds(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [type(value).__name__, repr(value)]
    return value


def run(engine, op, a):
    if op == "facts":
        return [[f.key, kinds(f.value)] for f in engine.facts(a["user"])]
    if op == "profile":
        return {"trace_id": engine.render_profile(a["user"], a["domain"]).trace_id}
    if op == "decide":
        made = engine.decide(a["user"], a["domain"], a["context"])
        return {"decision_id": made.decision_id, "action": made.result.action}
    if op == "logged":
        return kinds(engine.decision_log.get(a["decision_id"]).request.context)
    if op == "replay":
        replayed = engine.replay(a["decision_id"])
        return {"reproduced": replayed.reproduced, "differences": list(replayed.differences)}
    if op == "erase":
        return engine.erase(a["user"]).removed
    raise ValueError(op)


with Engine.connect(dsn, schema=schema, clock=FrozenClock(now)) as engine:
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            out = {"ok": run(engine, request.pop("op"), request)}
        except MemkgError as exc:
            out = {"error": exc.code, "message": str(exc)}
        print(json.dumps(out), flush=True)
"""


class EngineProcess:
    """An engine in a child process on ``schema``; a context manager that ends it."""

    def __init__(self, dsn: str, schema: str, now: str) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'engine'}:{ROOT / 'tests'}"}
        self.child = subprocess.Popen(
            [sys.executable, "-c", CHILD, dsn, schema, now],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.answer() == {"ready": True}

    def send(self, op: str, **arguments: Any) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.child.stdin.flush()

    def answer(self) -> Any:
        assert self.child.stdout is not None
        line = self.child.stdout.readline()
        assert line, f"the engine process ended (exit {self.child.wait(timeout=60)})"
        return json.loads(line)

    def call(self, op: str, **arguments: Any) -> Any:
        self.send(op, **arguments)
        return self.answer()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:  # fmt: skip
        for stream in (self.child.stdin, self.child.stdout):
            if stream is not None:
                stream.close()
        try:
            self.child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
