"""``memkg init``, ``memkg domains``, ``memkg keys``: start a domain, see what exists."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any, TextIO

from memkg.cli.common import EXIT_OK, emit
from memkg.config import EngineConfig


def cmd_init(config: EngineConfig, args: argparse.Namespace, out: TextIO) -> int:
    from memkg.scaffold import init_root

    folder = Path(args.dir)
    files = init_root(folder, args.domain)
    root, shown = str(folder), shlex.quote(str(folder))  # a command a shell can run as is
    emit(out, {"root": root, "domain": args.domain, "files": files,
               "next": [f"memkg --root {shown} rules lint", f"memkg --root {shown} rules test",
                        f"memkg --root {shown} keys {args.domain}"]})  # fmt: skip
    return EXIT_OK


def _engine(config: EngineConfig) -> Any:
    from memkg.engine import Engine

    return Engine(config=config)  # reads files only: no store is opened


def cmd_domains(config: EngineConfig, args: argparse.Namespace, out: TextIO) -> int:
    emit(out, {"domains": _engine(config).domains()})
    return EXIT_OK


def cmd_keys(config: EngineConfig, args: argparse.Namespace, out: TextIO) -> int:
    from memkg.engine.catalog import keys_markdown

    found = _engine(config).keys(args.domain)
    if args.format == "md":
        out.write(keys_markdown(args.domain, found))
    else:
        emit(out, {"domain": args.domain, "keys": found})
    return EXIT_OK


def add_commands(sub: Any) -> None:
    p = sub.add_parser("init", help="start a folder of your own domains with one that works")
    p.add_argument("dir", help="the folder (created if need be); use it with --root DIR")
    p.add_argument("--domain", required=True, help="the new domain's name (e.g. pets)")
    p.set_defaults(run=cmd_init, offline=True)

    p = sub.add_parser("domains", help="the domains in force, with where each comes from")
    p.set_defaults(run=cmd_domains, offline=True)

    p = sub.add_parser("keys", help="a domain's keys: kind, sensitivity, consent, schema, file")
    p.add_argument("domain")
    p.add_argument("--format", choices=("json", "md"), default="json")
    p.set_defaults(run=cmd_keys, offline=True)
