"""Identity commands: the user's memory switch (``memory``), and ids of one person (``merge``,
``split``, ``merges``)."""

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
    p.set_defaults(run=cmd_memory, reads=lambda args: args.switch == "status")
    add_merge_commands(sub)


def cmd_merge(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    merge = engine.merge_users(args.primary, args.other, by=args.by, reason=args.reason,
                               confirm=args.confirm)  # fmt: skip
    emit(out, merge.model_dump(mode="json"))
    return EXIT_OK


def cmd_split(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    merge = engine.split_users(args.primary, args.other, by=args.by, reason=args.reason)
    emit(out, merge.model_dump(mode="json"))
    return EXIT_OK


def cmd_merges(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.merges(args.user)
    emit(out, {"user_id": args.user, "merges": [m.model_dump(mode="json") for m in found]})
    return EXIT_OK


def add_merge_commands(sub: Any) -> None:
    p = sub.add_parser(
        "merge", help="two ids of one person: propose (prints the merge_id), then --confirm it"
    )
    p.add_argument("primary")
    p.add_argument("other")
    p.add_argument("--by", required=True, help="who asked or confirmed")
    p.add_argument("--reason", required=True, help="why they are one person")
    p.add_argument("--confirm", metavar="MERGE_ID", help="the proposal's merge_id: merge now")
    p.set_defaults(run=cmd_merge)

    p = sub.add_parser("split", help="undo a merge: each id reads its own memory again")
    p.add_argument("primary")
    p.add_argument("other")
    p.add_argument("--by", required=True)
    p.add_argument("--reason", required=True)
    p.set_defaults(run=cmd_split)

    p = sub.add_parser("merges", help="the merges an id's stream records")
    p.add_argument("user")
    p.set_defaults(run=cmd_merges, reads=True)
