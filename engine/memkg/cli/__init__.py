"""The ``memkg`` command line: JSON out by default, the same JSON an API client gets.

Exit status: 0 done; 1 the operation failed (unknown fact, conflict...); 2 bad usage;
3 input was refused by validation. One module per stage's commands.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from memkg.cli import arbitration, decisions, facts, graph, schema
from memkg.cli.common import EXIT_FAILED, EXIT_REFUSED, EXIT_USAGE, emit
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.errors import MemkgError
from memkg.service.commands import add_service_commands

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memkg",
        description="memkg: explainable memory and decisions for AI agents. Prints JSON; exit "
        "status 0 done, 1 failed, 2 bad usage, 3 input refused.",
    )
    parser.add_argument("--db", default="memkg.db", help="SQLite store (default ./memkg.db)")
    parser.add_argument("--root", type=Path, help="project folder with schemas/, ontology/, rules/")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for commands in (facts, graph, arbitration, decisions, schema):
        commands.add_commands(sub)
    add_service_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    config = EngineConfig(root=args.root) if args.root else EngineConfig()
    try:
        if getattr(args, "offline", False):  # reads files only: opens no store
            return int(args.run(config, args, out))
        with Engine.open(args.db, config=config) as engine:
            code: int = args.run(engine, args, out)
            return code
    except MemkgError as exc:
        emit(out, exc.to_dict())
        if exc.code == "usage":
            return EXIT_USAGE
        refused = exc.code in ("validation.failed", "migration.blocked")
        return EXIT_REFUSED if refused else EXIT_FAILED
