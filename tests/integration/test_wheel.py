"""The built wheel, installed (not editable) into a fresh virtual environment, works from an
empty folder: the README's library quickstart and every kind of command a user runs first.

Dependencies come from a wheelhouse kept beside the test environment (``<venv>/wheelhouse``):
filled once with ``pip wheel`` (pip's own cache makes that cheap after the first time), then
every run installs offline from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], ok: bool = True) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if ok and done.returncode != 0:
        raise AssertionError(f"{cmd} exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    # pip runs again under the target interpreter: a ``PYTHONPATH`` that reaches the source
    # tree would show it memkg as installed already, and it would install nothing
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )


def build_wheel(tmp: Path) -> Path:
    """The wheel built from a copy of the sources (the source tree stays untouched)."""
    src = tmp / "src"
    skip = shutil.ignore_patterns("*.egg-info", "__pycache__")
    shutil.copytree(SOURCE / "engine", src / "engine", ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SOURCE / name, src / name)
    done = _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src))
    assert done.returncode == 0, done.stderr
    [wheel] = (tmp / "dist").glob("memkg-*.whl")
    return wheel


def install(wheel: Path, venv: Path) -> Path:
    """A fresh virtual environment with ``memkg[service]`` from the wheel; its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    target = f"{wheel}[service]"
    offline = (
        "--python",
        str(python),
        "install",
        "--no-compile",
        "--no-index",
        "--find-links",
        str(WHEELHOUSE),
        target,
    )
    for stale in WHEELHOUSE.glob("memkg-*.whl"):  # never resolve memkg's extras from an old build
        stale.unlink()
    if _pip(*offline).returncode != 0:  # first run, or new dependencies: fill the wheelhouse
        filled = _pip("wheel", "-w", str(WHEELHOUSE), target)
        assert filled.returncode == 0, filled.stderr
        for built in WHEELHOUSE.glob("memkg-*.whl"):
            built.unlink()
        done = _pip(*offline)
        assert done.returncode == 0, done.stderr
    return venv / "bin"


def readme_library_quickstart() -> str:
    readme = (SOURCE / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart as a library in your project", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return code


MCP_CLIENT = """
import json, sys
import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

async def main():
    server = StdioServerParameters(command=sys.argv[1],
                                   args=["mcp", "--db", "mcp.db", "--user", "u1"])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        stored = await session.call_tool("remember", {
            "domain": "travel", "key": "airline.preferred",
            "value": "airline:MU", "source": "dialogue", "confidence": 0.9})
        print(json.dumps({"tools": tools, "error": stored.is_error,
                          "stored": stored.structured_content}))

anyio.run(main)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _http(url: str, body: dict[str, Any] | None = None, token: str = "") -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def serve_checks(memkg: str, cwd: Path, env: dict[str, str]) -> None:
    made = subprocess.run(
        [memkg, "--db", "http.db", "access", "key", "create", "agent", "--scope", "read",
         "--scope", "write", "--scope", "decide", "--domain", "travel"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    token = json.loads(made.stdout)["token"]
    port = _free_port()
    server = subprocess.Popen(
        [memkg, "serve", "--port", str(port), "--db", "http.db"],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # until it listens (or dies)
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                status, health = _http(f"{base}/v1/health")
                break
            except OSError:
                time.sleep(0.1)
        assert status == 200 and health["status"] == "ok", health
        status, stored = _http(
            f"{base}/v1/observations",
            {
                "user_id": "li",
                "domain": "travel",
                "key": "airline.avoided",
                "value": ["airline:MU"],
                "source": "dialogue",
                "confidence": 0.9,
            },
            token,
        )
        assert status == 201, stored
        status, made = _http(
            f"{base}/v1/users/li/decisions",
            {"domain": "travel", "context": {"airline": "airline:MU"}},
            token,
        )
        assert status == 201 and made["action"] == "suggest_other_airline", made
    finally:
        server.terminate()
        server.communicate(timeout=60)  # also closes the pipe


def test_the_installed_wheel_works_from_an_empty_folder(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "build")
    bin_dir = install(wheel, tmp_path / "venv")
    here = tmp_path / "empty"
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    memkg, python = str(bin_dir / "memkg"), str(bin_dir / "python")

    def cli(*argv: str, ok: bool = True) -> Any:
        out = _run([memkg, *argv], here, env, ok)
        return json.loads(out.splitlines()[0]) if out.strip().startswith("{") else out

    assert _run([memkg, "--version"], here, env).startswith("memkg 0.")
    found = _run([python, "-c", "import memkg; print(memkg.__file__)"], here, env).strip()
    assert Path(found).is_relative_to(tmp_path / "venv"), found

    # the README's library quickstart, as written
    out = _run([python, "-c", readme_library_quickstart()], here, env)
    assert out.startswith("suggest_other_airline\n")

    # ingest, facts, decide, explain, replay
    (here / "obs.jsonl").write_text(
        json.dumps(
            {
                "user_id": "mei",
                "domain": "travel",
                "key": "airline.avoided",
                "value": ["airline:MU"],
                "source": "dialogue",
                "confidence": 0.9,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    assert cli("ingest", "obs.jsonl")["status"] == "active"
    facts = cli("facts", "mei")
    assert [f["key"] for f in facts["facts"]] == ["airline.avoided"]
    made = cli("decide", "mei", "--domain", "travel", "--context", '{"airline": "airline:MU"}')
    assert made["action"] == "suggest_other_airline"
    assert "airline.avoided is airline:MU" in cli("explain", made["decision_id"])
    assert cli("replay", made["decision_id"])["reproduced"] is True

    # the gates: rules, schemas, a migration plan shipped with the examples
    assert cli("rules", "lint") == {"ok": True, "findings": []}
    assert cli("rules", "test")["passed"] is True
    examples = Path(
        _run(
            [python, "-c", "from memkg.roots import builtin; print(builtin('examples'))"], here, env
        ).strip()
    )
    health = examples / "schemas" / "health"
    check = cli(
        "schema", "check", str(health / "diet@1.json"), str(health / "diet@2.json"), ok=False
    )
    assert check["kind"] == "group" and check["compatible"] is False
    plan = health / "migrations" / "diet_organ_meat.yaml"
    dry = cli("schema", "migrate", str(plan), "--dry-run", ok=False)
    assert dry["verdict"] in ("PASS", "WARN", "BLOCK") and "findings" in dry, dry

    # a domain of one's own
    assert "schemas/pets/profile@1.json" in cli("init", "mine", "--domain", "pets")["files"]
    assert cli("--root", "mine", "rules", "lint") == {"ok": True, "findings": []}
    assert cli("rules", "test", "--root", "mine", "--no-examples")["cases"] == 2
    assert [k["key"] for k in cli("keys", "pets", "--root", "mine")["keys"]] == [
        "pets.budget", "pets.favorite"]  # fmt: skip

    # the service: HTTP and MCP
    serve_checks(memkg, here, env)
    out = _run([python, "-c", MCP_CLIENT, memkg], here, env)
    listed = json.loads(out.splitlines()[-1])
    assert "remember" in listed["tools"] and "decide" in listed["tools"]
    assert listed["error"] is False and listed["stored"]["status"] == "active"
