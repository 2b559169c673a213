"""The Dockerfile and compose.yaml, read as data: a slim image, the wheel inside, a non-root
user, commands memkg's own parser accepts, PostgreSQL beside it. (No container engine runs
here: these checks are what can be verified without one.)"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from memkg.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    joined = re.sub(r"\\\n\s*", " ", text)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def _exec_form(value: str) -> list[str]:
    parsed: Any = json.loads(value)
    assert isinstance(parsed, list) and all(isinstance(p, str) for p in parsed)
    return parsed


def test_the_image_is_slim_builds_the_wheel_and_runs_as_a_user() -> None:
    steps = instructions()
    stages = [rest for word, rest in steps if word == "FROM"]
    assert len(stages) == 2 and all(re.match(r"python:3\.1[12]-slim\b", s) for s in stages)
    final = steps[max(i for i, (word, _) in enumerate(steps) if word == "FROM") :]
    runs = " ".join(rest for word, rest in final if word == "RUN")
    assert "--no-index --find-links /wheels" in runs and "-e " not in runs
    assert "build-essential" not in runs  # the compiler stays in the build stage
    users = [rest for word, rest in final if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    last_user = max(i for i, (word, _) in enumerate(final) if word == "USER")
    assert last_user < min(i for i, (w, _) in enumerate(final) if w in ("ENTRYPOINT", "CMD"))
    for word, rest in steps:
        if word == "COPY" and "--from" not in rest:
            for source in shlex.split(rest)[:-1]:
                assert (ROOT / source).exists(), source
    [entry] = [_exec_form(rest) for word, rest in final if word == "ENTRYPOINT"]
    [cmd] = [_exec_form(rest) for word, rest in final if word == "CMD"]
    assert entry == ["memkg"]
    args = build_parser().parse_args(cmd)
    assert args.command == "serve" and not args.no_auth
    assert f"{args.port}" in [rest for word, rest in final if word == "EXPOSE"]
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert ".venv" in ignored and ".git" in ignored


def test_compose_runs_memkg_on_postgresql() -> None:
    doc = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = doc["services"]
    assert set(services) == {"memkg", "postgres"}
    assert services["postgres"]["image"].startswith("postgres:")
    assert "healthcheck" in services["postgres"]
    memkg = services["memkg"]
    assert memkg["build"] == "."
    assert memkg["depends_on"]["postgres"]["condition"] == "service_healthy"
    command = [re.sub(r"\$\{(\w+):-([^}]*)\}", r"\2", part) for part in memkg["command"]]
    args = build_parser().parse_args(command)
    assert args.command == "serve" and args.db.startswith("postgresql://")
    assert "@postgres:5432/" in args.db
    assert all(port.startswith("127.0.0.1:") for port in memkg["ports"])
