"""Docs stay honest: the README's commands exist and every CLI command is documented."""

from __future__ import annotations

import re
from pathlib import Path

from memkg.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]  # argparse has no public API
    return sorted(sub.choices)  # type: ignore[arg-type]


def test_quickstart_is_make_demo_and_make_test() -> None:
    quick = README.split("## Quickstart", 1)[1].split("##", 1)[0]
    assert re.findall(r"^make (\w+)", quick, flags=re.M) == ["demo", "test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, flags=re.M) and re.search(r"^test:", makefile, flags=re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_cli_command_is_in_the_readme() -> None:
    missing = [c for c in _commands() if f"`memkg {c}" not in README]
    assert missing == []


def test_architecture_names_every_subpackage() -> None:
    arch = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    package = ROOT / "engine" / "memkg"
    subpackages = sorted(p.name for p in package.iterdir() if (p / "__init__.py").exists())
    assert [name for name in subpackages if f"engine/memkg/{name}/" not in arch] == []
