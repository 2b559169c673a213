"""``memkg profile | recall``: what an agent would be given about a user, with its trace id."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_OK, emit, whole

if TYPE_CHECKING:
    from memkg.engine import Engine


def cmd_profile(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    profile = engine.render_profile(args.user, args.domain, args.budget, session_id=args.session)
    if args.format == "text":
        out.write(profile.text if profile.text.endswith("\n") else profile.text + "\n")
    else:
        emit(out, profile.model_dump(mode="json"))
    return EXIT_OK


def cmd_recall(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.recall(args.user, args.query, args.k, domain=args.domain,
                          session_id=args.session)  # fmt: skip
    emit(out, found.model_dump(mode="json"))
    return EXIT_OK


def add_commands(sub: Any) -> None:
    p = sub.add_parser("profile", help="the memory block for a prompt (render_profile)")
    p.add_argument("user")
    p.add_argument("--domain", required=True)
    p.add_argument("--budget", type=whole(1, 1_000_000),
                   help="tokens (default: EngineConfig.lifecycle)")  # fmt: skip
    p.add_argument("--session", help="the session whose notes count")
    p.add_argument(
        "--format", choices=("json", "text"), default="json",
        help="json: the block, what went in, what was dropped, and the trace id",
    )  # fmt: skip
    p.set_defaults(run=cmd_profile, reads=True)

    p = sub.add_parser("recall", help="the memories most useful for a query, ranked")
    p.add_argument("user")
    p.add_argument("query")
    p.add_argument(
        "-k",
        type=whole(0),
        default=5,
        help="how many to inject (default 5; 0 ranks every memory, injects none)",
    )
    p.add_argument("--domain")
    p.add_argument("--session", help="the session recalling, whose notes count")
    p.set_defaults(run=cmd_recall, reads=True)
