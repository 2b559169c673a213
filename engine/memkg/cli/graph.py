"""Graph commands: graph, signal, paths."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_OK, SEQ_MAX, emit, key_domain, whole

if TYPE_CHECKING:
    from memkg.engine import Engine


def cmd_graph(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.graph(args.user, args.domain, as_of=args.as_of, fmt=args.format)
    if isinstance(found, str):
        out.write(found)
    else:
        emit(out, found)
    return EXIT_OK


def cmd_signal(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    try:
        value = json.loads(args.value)
    except ValueError:
        value = args.value  # a bare word such as airline:MU or window
    domain = args.domain or key_domain(engine, args.key)
    event = engine.signal(args.user, domain, args.key, value, args.kind, session_id=args.session)
    emit(out, {"status": "recorded", "event_id": event.event_id, "seq": event.seq, **event.payload})
    return EXIT_OK


def cmd_paths(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.paths(args.user, args.concept, domain=args.domain, max_depth=args.max_depth)
    emit(
        out,
        {
            "user_id": args.user,
            "concept": args.concept,
            "paths": [p.model_dump(mode="json") for p in found],
        },
    )
    return EXIT_OK


def add_commands(sub: Any) -> None:
    p = sub.add_parser("graph", help="a user's graph with edge weights and their breakdowns")
    p.add_argument("user")
    p.add_argument("--domain", help="one memory domain (default: all the user's domains)")
    p.add_argument("--format", choices=("json", "turtle"), default="json")
    p.add_argument("--as-of", type=whole(0, SEQ_MAX), metavar="SEQ",
                   help="as of this log position")  # fmt: skip
    p.set_defaults(run=cmd_graph, reads=True)

    p = sub.add_parser(
        "signal", help="record that the user mentioned, corrected, ignored or rejected KEY → VALUE"
    )
    p.add_argument("user")
    p.add_argument("key")
    p.add_argument("value", help="an entity (airline:MU) or a JSON value")
    p.add_argument(
        "--kind", required=True, choices=("mention", "correction", "ignored", "rejected")
    )
    p.add_argument("--domain", help="needed when several domains declare KEY")
    p.add_argument("--session", help="the session the signal happened in")
    p.set_defaults(run=cmd_signal)

    p = sub.add_parser("paths", help="weighted paths from a user to a concept")
    p.add_argument("user")
    p.add_argument("concept", help="an entity, e.g. protocol:immediate_hospital_visit")
    p.add_argument("--domain", help="one memory domain (default: all the user's domains)")
    p.add_argument("--max-depth", type=whole(1, 6), default=3, metavar="N",
                   help="hops at most (1 to 6; default 3)")  # fmt: skip
    p.set_defaults(run=cmd_paths, reads=True)
