"""The HTTP service under concurrent clients: decisions from several clients at once, and
decisions while a slow admin call runs, with engine calls concurrent (as served) and one at a
time (as the service ran them before).

A real uvicorn server on loopback over the embedded default (one SQLite file), an admin key,
the shipped health rules; clients are threads sending JSON with ``urllib``. Each variant runs
in a fresh process, the two alternated round after round (``--rounds``); the figures are the
medians of the rounds:

* ``decide_per_s_1`` and ``_8``: decisions answered per second of wall time by one client and
  by eight, and the decision log's commits per decision with eight (below 1: shared commits);
* ``during_diff_*``: a rules diff re-making the last logged decisions (300 quick, 1,000 full)
  runs while one client asks for decision after decision: how many it got answered meanwhile,
  their median and longest wait. With calls made one at a time the client waits out the diff.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figures

CONTEXT = {"symptom": "fever"}
VARIANTS = ("concurrent", "serial")
DECIDE: dict[str, Any] = {"domain": "health", "context": CONTEXT}


@contextmanager
def serving(engine: Any) -> Iterator[tuple[str, str]]:
    """The service over ``engine`` on a free loopback port: its base URL and an admin key."""
    import uvicorn

    from memkg.access import Keyring, MemoryAccessStore
    from memkg.service.http import create_app
    from memkg.service.settings import ServiceSettings

    keyring = Keyring(MemoryAccessStore(), engine.clock)
    app = create_app(engine, keyring=keyring, settings=ServiceSettings(rate_limit=0))
    key = keyring.create("bench", ["admin"], ["*"]).token
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", key
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


def post(base: str, key: str, path: str, body: Any) -> int:
    sent = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), method="POST",
        headers={"authorization": f"Bearer {key}", "content-type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(sent, timeout=600) as answer:
        answer.read()
        return int(answer.status)


def one_at_a_time() -> None:
    """Make the service's ``Gate`` run one engine call at a time, as it used to."""
    from memkg.service import gate

    lock = threading.Lock()

    def serial(self: Any, call: Any, /, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return call(*args, **kwargs)

    gate.Gate.__call__ = serial  # type: ignore[method-assign]


def measure(folder: Path, logged: int, per_client: int) -> dict[str, float]:
    """One service's figures, in this process (the variant is the ``Gate`` in force)."""
    from memkg import Engine

    users, got = 20, {}
    engine = Engine.open(folder / "m.db")
    people = [f"u{n}" for n in range(users)]
    for person in people:
        engine.ingest({"user_id": person, "domain": "health", "key": "child.age", "value": 4,
                       "source": "profile"})  # fmt: skip
    for n in range(logged):
        engine.decide(people[n % users], "health", CONTEXT)
    log = engine.decision_log
    with serving(engine) as (base, key):
        for clients in (1, 8):
            commits = getattr(log, "commits", 0)

            def decide(n: int) -> None:
                for i in range(per_client):
                    post(base, key, f"/v1/users/{people[(n + i) % users]}/decisions", DECIDE)

            pool = [threading.Thread(target=decide, args=(n,)) for n in range(clients)]
            started = time.perf_counter()
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join()
            got[f"decide_per_s_{clients}"] = clients * per_client / (time.perf_counter() - started)
            got[f"commits_per_decision_{clients}"] = (getattr(log, "commits", 0) - commits) / (
                clients * per_client
            )
        took: list[float] = []
        diff = threading.Thread(target=lambda: took.append(_timed(
            lambda: post(base, key, "/v1/admin/rules/diff", {"replay": logged}))))  # fmt: skip
        diff.start()
        waits: list[float] = []
        while diff.is_alive():
            waits.append(_timed(lambda: post(base, key, f"/v1/users/{people[len(waits) % users]}"
                                             "/decisions", DECIDE)))  # fmt: skip
        diff.join()
    engine.close()
    got["diff_s"] = took[0]
    got["during_diff_answered"] = len(waits)
    got["during_diff_p50_ms"] = statistics.median(waits) * 1e3
    got["during_diff_max_ms"] = max(waits) * 1e3
    return got


def _timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


UNITS = {"decide_per_s_1": ("decisions/s", "one client"),
         "decide_per_s_8": ("decisions/s", "eight clients"),
         "commits_per_decision_8": ("", "the decision log's, eight clients"),
         "diff_s": ("s", "the rules diff itself"),
         "during_diff_answered": ("decisions", "one client's, answered while the diff ran"),
         "during_diff_p50_ms": ("ms", "their median wait"),
         "during_diff_max_ms": ("ms", "their longest wait")}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run for a shared machine")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both variants (3)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logged, per_client = (300, 25) if args.quick else (1_000, 60)
    if args.variant is not None:  # one variant in a process of its own: its figures as JSON
        if args.variant == "serial":
            one_at_a_time()
        with tempfile.TemporaryDirectory(prefix="memkg-service-") as tmp:
            print(json.dumps(measure(Path(tmp), logged, per_client)))
        return
    runs: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
    for round_ in range(args.rounds):  # each variant in a fresh process, the order alternated
        for variant in VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]:
            command = [sys.executable, __file__, "--variant", variant]
            done = subprocess.run(command + ["--quick"] * args.quick, check=True,
                                  capture_output=True, text=True)  # fmt: skip
            runs[variant].append(json.loads(done.stdout.splitlines()[-1]))
    figures = Figures()
    for variant, measured in runs.items():
        for name, (unit, note) in UNITS.items():
            value = statistics.median(m[name] for m in measured)
            figures.add(f"service.{variant}.{name}", value, unit, f"{note}; median of rounds")
    median = {v: {n: statistics.median(m[n] for m in runs[v]) for n in UNITS} for v in VARIANTS}
    concurrent, serial = median["concurrent"], median["serial"]
    figures.add("service.decide_per_s_8_ratio",
                concurrent["decide_per_s_8"] / serial["decide_per_s_8"], "x",
                "eight clients' decisions per second, concurrent / one at a time")  # fmt: skip
    figures.add("service.during_diff_answered_ratio",
                concurrent["during_diff_answered"] / max(serial["during_diff_answered"], 1), "x",
                "decisions answered while the diff ran, concurrent / one at a time")  # fmt: skip
    figures.add("service.during_diff_max_wait_ratio",
                serial["during_diff_max_ms"] / concurrent["during_diff_max_ms"], "x",
                "the longest wait while the diff ran, one at a time / concurrent")  # fmt: skip
    figures.save(args.json)


if __name__ == "__main__":
    main()
