"""The ``memkg`` command line: JSON out by default, the same JSON an API client gets.

Exit status: 0 done; 1 the operation failed (unknown fact, conflict...); 2 bad usage;
3 input was refused by validation. One module per stage's commands.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import TextIO

from memkg.cli import (
    arbitration,
    authoring,
    decisions,
    facts,
    graph,
    identity,
    lifecycle,
    schema,
)
from memkg.cli.common import (
    EXIT_FAILED,
    EXIT_REFUSED,
    EXIT_USAGE,
    emit,
    is_postgres,
    require_store,
)
from memkg.cli.logs import LEVELS, configure
from memkg.config import EngineConfig
from memkg.errors import MemkgError
from memkg.service.commands import add_service_commands

__all__ = ["build_parser", "main"]

log = logging.getLogger("memkg.cli")


_DB_HELP = "SQLite file (default ./memkg.db) or postgresql:// URL"
_SCHEMA_HELP = "PostgreSQL schema of memkg's tables (default memkg)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memkg",
        description="memkg: explainable memory and decisions for AI agents. Prints JSON; exit "
        "status 0 done, 1 failed, 2 bad usage, 3 input refused.",
    )
    parser.add_argument("--version", action="version", version=f"memkg {_version()}")
    parser.add_argument("--db", default="memkg.db", help=_DB_HELP)
    parser.add_argument("--pg-schema", default="memkg", help=_SCHEMA_HELP)
    parser.add_argument("--log-level", choices=LEVELS, default="warning",
                        help="log memkg's work to standard error (never user data)")  # fmt: skip
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument(
        "--trace-retention", type=float, metavar="DAYS",
        help="keep each request's trace this long (default 7; 0: no traces)",
    )  # fmt: skip
    _root_options(parser, before=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for commands in (facts, graph, arbitration, decisions, lifecycle, schema, authoring,
                     identity):  # fmt: skip
        commands.add_commands(sub)
    add_service_commands(sub)
    for command in _subparsers(parser):
        _root_options(command, before=False)
    return parser


def _root_options(parser: argparse.ArgumentParser, *, before: bool) -> None:
    """``--root``, ``--no-examples``, ``--db`` and ``--pg-schema``: accepted before and after
    the command.

    After the command they land in their own names (``SUPPRESS``: absent unless given), so a
    ``--root`` given after the command adds to those given before instead of replacing them.
    """
    late = "" if before else "late_"
    parser.add_argument(
        "--root", dest=f"{late}roots", type=Path, action="append",
        default=[] if before else argparse.SUPPRESS, metavar="DIR",
        help="a folder of your own domains (schemas/<domain>/, rules/<domain>/, ontology/); "
        "repeat for several, later ones override earlier ones and the examples",
    )  # fmt: skip
    parser.add_argument(
        "--no-examples", dest=f"{late}no_examples", action="store_true",
        default=False if before else argparse.SUPPRESS,
        help="leave out the example domains shipped with memkg",
    )  # fmt: skip
    if not before and "--db" not in parser._option_string_actions:
        parser.add_argument("--db", default=argparse.SUPPRESS, help=_DB_HELP)
    if not before and "--pg-schema" not in parser._option_string_actions:
        parser.add_argument("--pg-schema", default=argparse.SUPPRESS, help=_SCHEMA_HELP)


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += [child, *_subparsers(child)]
    return found


def config_from(args: argparse.Namespace) -> EngineConfig:
    """The engine configuration the global options describe."""
    roots = [*args.roots, *getattr(args, "late_roots", [])]
    examples = not (args.no_examples or getattr(args, "late_no_examples", False))
    config = EngineConfig(roots=tuple(roots), examples=examples)
    days = getattr(args, "trace_retention", None)
    if days is None:
        return config
    if not 0 <= days <= 36_500:
        raise MemkgError(f"--trace-retention {days}: give days from 0 (no traces) to 36500",
                         code="usage")  # fmt: skip
    return config.model_copy(update={"trace_retention": timedelta(days=days)})


_REFUSED = frozenset({"validation.failed", "migration.blocked", "text.nul",
                      "text.invalid_unicode", "value.non_finite"})  # fmt: skip
"""Codes of input refused (exit 3): what was given, not the operation, is at fault."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memkg")
    except PackageNotFoundError:  # running from a source tree that was never installed
        from memkg import __version__

        return __version__


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = configure(args.log_level, args.log_format, sys.stderr)
    try:
        config = config_from(args)
        if getattr(args, "offline", False):  # reads files only: opens no store
            return int(args.run(config, args, out))
        started = time.perf_counter()
        from memkg.engine import Engine

        log.info("engine imported", extra={"seconds": round(time.perf_counter() - started, 3)})
        reads = getattr(args, "reads", False)  # True, or a test of the arguments
        reads = reads(args) if callable(reads) else reads
        if getattr(args, "storeless", False):
            engine = Engine(config=config)  # rule files read, cases run in memory
        else:
            if reads:
                require_store(args.db, args.pg_schema)
            engine = (
                Engine.connect(args.db, schema=args.pg_schema, config=config)
                if is_postgres(args.db)
                else Engine.open(args.db, config=config)
            )
        with engine:
            code: int = args.run(engine, args, out)
            return code
    except MemkgError as exc:
        # a command whose standard output is a protocol's (``memkg mcp``: JSON-RPC) says why
        # it stopped on standard error, where its host logs what the server says
        emit(sys.stderr if getattr(args, "protocol_stdout", False) else out, exc.to_dict())
        if exc.code == "usage":
            return EXIT_USAGE
        return EXIT_REFUSED if exc.code in _REFUSED else EXIT_FAILED
    finally:  # leave the process's logging as it was (main runs in-process in tests and tools)
        logger = logging.getLogger("memkg")
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
