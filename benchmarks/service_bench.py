"""The HTTP service under concurrent clients: decisions from several clients at once, and
decisions while a slow admin call runs, with engine calls concurrent (as served) and, in the
same run, one at a time (as the service ran them before).

A real uvicorn server on loopback over the embedded default (one SQLite file), an admin key,
the shipped health rules; clients are threads sending JSON with ``urllib``. Figures:

* ``service.decide_per_s_1`` and ``_8``: decisions answered per second of wall time by one
  client and by eight, and the decision log's commits per decision with eight (below 1: the
  commits were shared);
* ``service.during_diff_*``: a rules diff re-making the last 1,000 logged decisions runs while
  one client asks for decision after decision; how many it got answered meanwhile, and their
  median and worst wait. With calls made one at a time the client waits out the whole diff.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
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


def run(
    folder: Path, users: int, logged: int, per_client: int, figures: Figures, label: str
) -> int:
    """Measure one service; how many decisions it answered while the diff ran."""
    from memkg import Engine

    engine = Engine.open(folder / f"{label}.db")
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
            elapsed = time.perf_counter() - started
            figures.add(f"service.{label}.decide_per_s_{clients}", clients * per_client / elapsed,
                        "decisions/s", f"{clients} client(s)")  # fmt: skip
            if clients > 1 and hasattr(log, "commits"):
                figures.add(f"service.{label}.commits_per_decision_8",
                            (log.commits - commits) / (clients * per_client), "",
                            "8 clients")  # fmt: skip
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
    figures.add(f"service.{label}.diff_s", took[0], "s", f"rules diff re-making {logged} decisions")
    figures.add(f"service.{label}.during_diff_answered", len(waits), "decisions",
                "answered while the diff ran")  # fmt: skip
    figures.add(f"service.{label}.during_diff_p50_ms", statistics.median(waits) * 1e3, "ms")
    figures.add(f"service.{label}.during_diff_max_ms", max(waits) * 1e3, "ms")
    return len(waits)


def _timed(call: Any) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run for a shared machine")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    args = parser.parse_args()
    figures = Figures()
    logged, per_client = (300, 25) if args.quick else (1_000, 60)
    with tempfile.TemporaryDirectory(prefix="memkg-service-") as tmp:
        concurrent = run(Path(tmp), 20, logged, per_client, figures, "concurrent")
        one_at_a_time()
        serial = run(Path(tmp), 20, logged, per_client, figures, "serial")
    figures.add("service.during_diff_answered_ratio", concurrent / max(serial, 1), "x",
                "decisions answered during the diff, concurrent / one at a time")  # fmt: skip
    figures.save(args.json)


if __name__ == "__main__":
    main()
