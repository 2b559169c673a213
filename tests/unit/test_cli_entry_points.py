"""The CLI's doors to the optional extras and the servers: a missing extra, an option out of
range, a port that is taken, ``--pg-schema`` after the command, paths in ``init``'s advice."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import socket
import sys
from pathlib import Path

import pytest

from memkg import Engine, MemkgError
from memkg.cli import build_parser, main

PG_URL = "postgresql://memkg@127.0.0.1:1/memkg"


def run(*argv: str) -> tuple[int, dict[str, object]]:
    """The exit code and the last JSON line said: on standard output, or on standard error for
    ``mcp`` (whose standard output is the protocol's)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(argv), out)
    return code, json.loads((out.getvalue() or err.getvalue()).splitlines()[-1])


@pytest.fixture
def no_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError


@pytest.mark.usefixtures("no_psycopg")
def test_postgres_without_its_extra_says_which_extra_to_install() -> None:
    code, error = run("--db", PG_URL, "facts", "li")
    assert code == 1 and error["error"] == "store.driver_missing"
    assert "whl[postgres]'" in str(error["message"])
    with pytest.raises(MemkgError) as raised:
        Engine.connect(PG_URL)
    assert raised.value.code == "store.driver_missing"


@pytest.mark.usefixtures("no_psycopg")
def test_serve_and_mcp_on_postgres_without_its_extra(tmp_path: Path) -> None:
    for argv in (["serve"], ["mcp", "--user", "li"]):
        code, error = run("--db", PG_URL, *argv)
        assert (code, error["error"]) == (1, "store.driver_missing"), argv


@pytest.mark.parametrize(
    ("option", "value"),
    [("--port", "99999"), ("--port", "-1"), ("--rate-limit", "-5"), ("--body-timeout", "0"),
     ("--body-timeout", "nan"), ("--header-timeout", "-1"), ("--header-timeout", "99999")],
)  # fmt: skip
def test_serve_options_out_of_range_are_usage_errors(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--db", str(tmp_path / "m.db"), "serve", option, value], io.StringIO())
    assert done.value.code == 2
    assert option in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "module", "code"),
    [(["serve"], "uvicorn", "service.unavailable"), (["mcp", "--user", "li"], "mcp",
                                                     "mcp.unavailable")],
)  # fmt: skip
def test_servers_without_the_service_extra(
    argv: list[str], module: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    status, error = run("--db", str(tmp_path / "m.db"), *argv)
    assert (status, error["error"]) == (1, code)
    assert "whl[service]'" in str(error["message"])


def test_the_mcp_module_without_the_service_extra_says_which_to_install() -> None:
    """``python -m memkg.service.mcp`` (the README's other form of ``memkg mcp``) without the
    ``mcp`` SDK: one JSON line on standard error, exit 1, no traceback."""
    import subprocess

    blocked = ("import runpy, sys; sys.modules['mcp'] = None; "
               "runpy.run_module('memkg.service.mcp', run_name='__main__')")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", blocked, "--user", "li"], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 1 and done.stdout == "" and "Traceback" not in done.stderr
    said = json.loads(done.stderr.strip().splitlines()[-1])
    assert said["error"] == "mcp.unavailable" and "whl[service]'" in said["message"]


def test_a_port_in_use_is_a_failure_naming_the_port(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, error = run("--db", str(tmp_path / "m.db"), "serve", "--no-auth",
                            "--port", str(port))  # fmt: skip
    assert (status, error["error"]) == (1, "service.bind")
    assert f"127.0.0.1:{port}" in str(error["message"])


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--user", "li"], ["facts", "li"]])
def test_pg_schema_after_the_command(command: list[str]) -> None:
    parser = build_parser()
    args = parser.parse_args([*command, "--db", PG_URL, "--pg-schema", "tenant_a"])
    assert (args.db, args.pg_schema) == (PG_URL, "tenant_a")
    assert parser.parse_args(["--pg-schema", "b", *command]).pg_schema == "b"
    assert parser.parse_args(command).pg_schema == "memkg"


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_server_help_says_db_takes_a_url(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "postgresql://" in text and "--pg-schema" in text
    assert "SQLite store" not in text


def test_init_quotes_a_root_with_spaces(tmp_path: Path) -> None:
    root = tmp_path / "my domains"
    code, made = run("init", str(root), "--domain", "pets")
    assert code == 0
    for command in made["next"]:  # type: ignore[union-attr]
        words = shlex.split(command)
        assert words[:3] == ["memkg", "--root", str(root)]
