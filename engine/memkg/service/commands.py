"""``memkg serve`` (HTTP) and ``memkg mcp`` (MCP over stdio), for the CLI's parser.

The libraries are imported when a command runs, so the rest of the CLI works without the
``service`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any, TextIO

from memkg.engine import Engine


def run_serve(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    from memkg.service.http import serve

    serve(engine, args.host, args.port)
    return 0


def run_mcp(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    from memkg.service.mcp import build_server

    with contextlib.suppress(KeyboardInterrupt):
        build_server(engine).run("stdio")  # standard output is the protocol's: nothing else on it
    return 0


def add_service_commands(sub: Any) -> None:
    """Register ``serve`` and ``mcp``; each takes ``--db`` after it too."""
    p = sub.add_parser("serve", help="serve the JSON HTTP API (needs the service extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    _db_option(p)
    p.set_defaults(run=run_serve)

    p = sub.add_parser("mcp", help="serve MCP tools over stdio (needs the service extra)")
    _db_option(p)
    p.set_defaults(run=run_mcp)


def _db_option(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: when not given here, the main parser's --db (and its default) stands.
    parser.add_argument("--db", default=argparse.SUPPRESS, help="SQLite store (default ./memkg.db)")
