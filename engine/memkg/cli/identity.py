"""Identity commands: the user's memory switch, and merging ids of one person."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_OK, emit

if TYPE_CHECKING:
    from memkg.engine import Engine


def cmd_memory(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    if args.switch == "off":
        receipt = engine.disable_memory(args.user, mode=args.mode, by=args.by, reason=args.reason)
        emit(out, receipt.model_dump(mode="json"))
    elif args.switch == "on":
        emit(out, engine.enable_memory(args.user, by=args.by, reason=args.reason)
             .model_dump(mode="json"))  # fmt: skip
    else:
        emit(out, engine.memory_state(args.user).model_dump(mode="json"))
    return EXIT_OK


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "memory", help="the user's memory switch: show it, turn memory off (keep or erase) or on"
    )
    p.add_argument("switch", choices=("status", "off", "on"))
    p.add_argument("user")
    p.add_argument("--mode", choices=("keep", "erase"), default="keep",
                   help="off: keep memory frozen (default) or erase it")  # fmt: skip
    p.add_argument("--by", default="user", help="who asked (default: user)")
    p.add_argument("--reason", default="")
    p.set_defaults(run=cmd_memory)
