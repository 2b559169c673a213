"""``memkg serve`` as an operator starts it: keys from ``memkg access``, an access log on stderr."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from memkg.cli import main

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str, token: str | None = None) -> tuple[int, dict[str, object]]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


def test_serve_needs_the_keys_it_was_given(tmp_path: Path) -> None:
    db = str(tmp_path / "memkg.db")
    out = io.StringIO()
    assert main(["--db", db, "access", "key", "create", "ops", "--scope", "read",
                 "--domain", "travel"], out) == 0  # fmt: skip
    token = json.loads(out.getvalue())["token"]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "memkg", "--db", db, "serve", "--port", str(port)],
        stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ENGINE), "PATH": ""},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if get(f"{base}/v1/health")[0] == 200:
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
        status, body = get(f"{base}/v1/users/li/facts")
        assert status == 401 and body["error"] == "auth.required"
        assert get(f"{base}/v1/users/li/facts", token)[0] == 200
        assert get(f"{base}/v1/users/li/facts?domain=health", token)[0] == 403
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    logged = [json.loads(line) for line in errors.splitlines() if line.startswith("{")]
    assert logged[0] == {"listening": base}  # where it listens, first
    assert [(line["operation"], line["status"]) for line in logged[1:]][-3:] == [
        ("facts", 401), ("facts", 200), ("facts", 403)]  # fmt: skip
    assert "li" not in "".join(json.dumps(line) for line in logged[1:])  # no user id logged


def test_serve_says_where_it_listens_the_port_the_system_chose_too(tmp_path: Path) -> None:
    """``--port 0``: the system picks a free port, and the first line on standard error says
    which, so a supervisor or a test can reach the server without guessing."""
    server = subprocess.Popen(
        [sys.executable, "-m", "memkg", "--db", str(tmp_path / "m.db"), "serve", "--port", "0",
         "--no-auth"],
        stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ENGINE), "PATH": ""},
    )  # fmt: skip
    try:
        assert server.stderr is not None
        said = json.loads(server.stderr.readline())
        host, port = said["listening"].removeprefix("http://").rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        deadline = time.monotonic() + 60
        while True:
            try:
                assert get(f"{said['listening']}/v1/health")[0] == 200
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.2)
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_where_it_listens_stays_first_when_there_is_no_key_yet(tmp_path: Path) -> None:
    """A store with no API key yet: the warning that every call will get 401 comes after the
    line that says where it listens, which a script reads first for the port."""
    server = subprocess.Popen(
        [sys.executable, "-m", "memkg", "--db", str(tmp_path / "m.db"), "serve", "--port", "0"],
        stderr=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ENGINE), "PATH": ""},
    )  # fmt: skip
    try:
        assert server.stderr is not None
        said = json.loads(server.stderr.readline())
        assert said["listening"].startswith("http://127.0.0.1:")
        assert "no active API key yet" in server.stderr.readline()
    finally:
        server.terminate()
        server.communicate(timeout=30)
