"""The crash harness's child side: a zygote that forks workers running a workload plan.

Started once per harness run (``python -m support.crash_child SEED COUNT``), it imports memkg
and builds the plan, then reads one JSON command a line from stdin:

* ``{"run": SPEC}`` forks a worker that opens the store ``SPEC`` names, runs the plan from
  ``SPEC["start"]`` and appends one JSON line per acknowledgement to ``SPEC["acks"]``; the
  zygote answers with the worker's pid (the harness ``SIGKILL``s it);
* ``{"wait": PID}`` reaps that worker and answers with its exit status.

Forking keeps a kill cheap: the worker starts with every module imported.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from memkg import FrozenClock, MemkgError
from support import workload
from support.stores import open_engine


def _work(spec: dict[str, Any], ops: list[workload.Op]) -> None:
    out = os.open(spec["acks"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def say(line: dict[str, Any]) -> None:
        os.write(out, json.dumps(line).encode() + b"\n")  # one write: whole lines or nothing

    clock = FrozenClock(workload.T0)
    engine = open_engine(spec, clock)
    say({"ready": spec["start"]})
    for op in ops[spec["start"] :]:
        try:
            ack = workload.run(engine, clock, op)
        except MemkgError as exc:
            ack = {"i": op.index, "kind": op.kind, "user": op.user, "refused": exc.code,
                   "message": exc.message}  # fmt: skip
        say(ack)
    engine.close()
    say({"done": True})


def main() -> None:
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    ops = workload.plan(seed, count)
    for line in sys.stdin:
        command = json.loads(line)
        if "run" in command:
            pid = os.fork()
            if pid == 0:
                status = 0
                try:
                    _work(command["run"], ops)
                except BaseException:
                    traceback.print_exc()
                    status = 1
                os._exit(status)
            reply: dict[str, Any] = {"pid": pid}
        else:
            _, status = os.waitpid(command["wait"], 0)
            reply = {"status": status}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
