"""Four engine processes on one PostgreSQL schema, two ``memkg serve`` replicas over HTTP and
two library workers, write, confirm, signal and decide for the same 50 users at once; a
history checker (``support.replicas.check``) finds no lost or doubled write, versions that
rise, no decision that missed a write acknowledged before it began, and fewer than 1% of
unconditional writes surfacing a conflict."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from memkg import Engine
from support.replicas import RACED, HttpActor, Op, check, history_from, run_actor

pytestmark = pytest.mark.postgres
pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'engine'}:{ROOT / 'tests'}"}
USERS = 50
PER_ACTOR = 35
"""Operations per actor: 2 workers + 2 threads on each of 2 replicas = 6 actors."""


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _up(base: str, server: subprocess.Popen[str]) -> None:
    for _ in range(600):  # a bound on polls while the replica imports and binds
        try:
            with urllib.request.urlopen(f"{base}/v1/ready", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        time.sleep(0.2)
    raise AssertionError(f"{base} never became ready")


def test_replicas_and_workers_keep_every_acknowledged_write(
    postgres_dsn: str, pg_schema: str
) -> None:
    with Engine.connect(postgres_dsn, schema=pg_schema):
        pass  # the schema exists before four processes race to create it
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "support.replicas",
                postgres_dsn,
                pg_schema,
                f"worker{n}",
                str(100 + n),
                str(PER_ACTOR),
                str(USERS),
            ],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    ports = [_port(), _port()]
    replicas = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memkg",
                "--db",
                postgres_dsn,
                "--pg-schema",
                pg_schema,
                "serve",
                "--no-auth",
                "--port",
                str(port),
            ],
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    try:
        for port, server in zip(ports, replicas, strict=True):
            _up(f"http://127.0.0.1:{port}", server)
        for worker in workers:  # imported memkg and loaded its schemas
            assert worker.stderr is not None and worker.stdin is not None
            assert worker.stderr.readline().strip() == "ready"
        start = time.time() + 0.5
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write(f"{start}\n")
            worker.stdin.flush()
        histories: list[list[Op]] = []

        def http(n: int, port: int) -> None:
            time.sleep(max(0.0, start - time.time()))
            actor = HttpActor(f"http://127.0.0.1:{port}")
            histories.append(run_actor(f"http{n}", actor, 200 + n, PER_ACTOR, USERS))

        threads = [threading.Thread(target=http, args=(n, ports[n % 2])) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        retried = 0
        for worker in workers:
            out, err = worker.communicate(timeout=300)
            assert worker.returncode == 0, err
            histories.append(history_from(out))
            retried += json.loads(err.strip().splitlines()[-1])["conflicts"]
    finally:
        for process in [*replicas, *workers]:
            if process.poll() is None:
                process.terminate()
            process.communicate(timeout=30)

    history = [op for ops in histories for op in ops]
    assert len(history) == 6 * PER_ACTOR
    with Engine.connect(postgres_dsn, schema=pg_schema) as engine:
        verdict = check(history, engine.read_events,
                        lambda d: engine.replay(d).reproduced)  # fmt: skip
    assert verdict.problems == []
    failed = [(op.kind, op.error) for op in history if not op.ok]
    # nothing was refused but a second step another writer's write made moot (RACED)
    assert {error for _, error in failed} <= RACED
    assert verdict.surfaced_conflicts < 0.01 * verdict.writes
    assert verdict.decisions >= 20 and verdict.writes >= 120
    print(f"\nreplicas: {verdict.writes} writes, {verdict.decisions} decisions, "
          f"{retried} conflicts retried by the library workers, "
          f"{verdict.surfaced_conflicts} surfaced, {len(failed)} second steps refused")  # fmt: skip
