"""Arbitration commands: claims, review list, review resolve."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_OK, emit, key_domain
from memkg.errors import MemkgError

if TYPE_CHECKING:
    from memkg.engine import Engine


def _json_or_word(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word such as city:shanghai or window


def _field(text: str) -> tuple[str, str]:
    """An argparse type: one ``FIELD=VALUE`` of a context slot (a usage error, exit 2,
    otherwise, as HTTP refuses a malformed ``context=``)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not FIELD=VALUE, e.g. trip_type=business"
        )
    return name, value


def cmd_claims(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    context = dict(args.context)
    if len(context) < len(args.context):  # which one was meant? the last would be taken
        twice = next(n for i, (n, _) in enumerate(args.context)
                     if n in dict(args.context[:i]))  # fmt: skip
        raise MemkgError(f"--context names {twice[:40]!r} twice: give each field once",
                         code="usage")  # fmt: skip
    domain = args.domain or key_domain(engine, args.key)
    resolution = engine.resolve(
        args.user, domain, args.key, session_id=args.session, turn=args.turn, context=context,
        language=args.language,
    )  # fmt: skip
    emit(out, resolution.model_dump(mode="json"))
    return EXIT_OK


def cmd_review_list(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    reviews = engine.review_queue(include_resolved=args.all)
    emit(out, {"reviews": [r.model_dump(mode="json") for r in reviews]})
    return EXIT_OK


def cmd_review_resolve(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    value = _json_or_word(args.value)
    review = engine.resolve_review(args.review_id, value, args.note, args.reviewer)
    emit(out, review.model_dump(mode="json"))
    return EXIT_OK


def add_commands(sub: Any) -> None:
    p = sub.add_parser("claims", help="the competing claims for a key and the arbitration outcome")
    p.add_argument("user")
    p.add_argument("key")
    p.add_argument("--domain", help="needed when several domains declare KEY")
    p.add_argument("--session", help="bring this session's notes in")
    p.add_argument("--turn", help="this turn's source_ref: its instruction comes first")
    p.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        type=_field,
        help="a context slot's field (repeat for several)",
    )
    p.add_argument("--language", choices=("en", "zh"), help="of the clarification question")
    p.set_defaults(run=cmd_claims, reads=True)

    p = sub.add_parser("review", help="the human-review queue of frozen keys")
    review = p.add_subparsers(dest="review_command", required=True, metavar="ACTION")
    q = review.add_parser("list", help="frozen keys waiting for a reviewer")
    q.add_argument("--all", action="store_true", help="include resolved reviews")
    q.set_defaults(run=cmd_review_list, reads=True)
    q = review.add_parser("resolve", help="settle a frozen key with a value; it unfreezes")
    q.add_argument("review_id")
    q.add_argument("--value", required=True, help="a JSON value or a bare word")
    q.add_argument("--note", required=True)
    q.add_argument("--reviewer", default="reviewer", help="who decided (default: reviewer)")
    q.set_defaults(run=cmd_review_resolve)
