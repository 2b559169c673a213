"""The ``memkg`` command line: JSON out by default, the same JSON an API client gets.

Exit status: 0 done; 1 the operation failed (unknown fact, conflict...); 2 bad usage;
3 input was refused by validation.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from memkg.cli.decisions import add_commands as add_decision_commands
from memkg.cli.schema import add_commands as add_schema_commands
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.errors import MemkgError
from memkg.model.report import Problem, ValidationReport
from memkg.validate.limits import json_text_depth

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3
_BATCH = 500


def _emit(out: TextIO, data: Any) -> None:
    out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")


def _read_jsonl(
    path: str, config: EngineConfig
) -> Iterator[tuple[int, dict[str, Any] | ValidationReport]]:
    """(line number, observation or the report of why the line is not one)."""
    handle = sys.stdin if path == "-" else open(path, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    limits = config.limits
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            problem = None
            if len(line) > limits.max_line_bytes:
                problem = (
                    "limit.size",
                    f"line of {len(line):,} bytes exceeds {limits.max_line_bytes:,}",
                )
            elif json_text_depth(line, limits.max_depth + 2) > limits.max_depth + 2:
                problem = ("limit.depth", f"nested deeper than {limits.max_depth} levels")
            else:
                try:
                    data = json.loads(line)
                except ValueError as exc:
                    problem = ("input.json", f"not JSON: {exc}")
                else:
                    if not isinstance(data, dict):
                        problem = ("envelope.type", "each line must be a JSON object")
            if problem is not None:
                code, message = problem
                report = ValidationReport(
                    problems=(Problem(code=code, path="$", message=message, stage="input"),)
                )
                yield number, report
            else:
                yield number, data


def cmd_ingest(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    refused = False
    pending: list[tuple[int, dict[str, Any]]] = []

    def flush() -> None:
        nonlocal refused
        outcomes = engine.ingest_many([obs for _, obs in pending])
        for (number, _), outcome in zip(pending, outcomes, strict=True):
            if outcome.accepted and outcome.result is not None:
                _emit(
                    out,
                    {
                        "line": number,
                        "result": "accepted",
                        **outcome.result.model_dump(mode="json"),
                    },
                )
            else:
                refused = True
                problems = outcome.report.model_dump(mode="json") if outcome.report else {}
                _emit(out, {"line": number, "result": "rejected", **problems})
        pending.clear()

    for number, item in _read_jsonl(args.file, engine.config):
        if isinstance(item, ValidationReport):
            flush()
            refused = True
            _emit(out, {"line": number, "result": "rejected", **item.model_dump(mode="json")})
            continue
        pending.append((number, item))
        if len(pending) >= _BATCH:
            flush()
    flush()
    return EXIT_REFUSED if refused else EXIT_OK


def cmd_facts(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    facts = engine.facts(args.user, args.domain, as_of=args.as_of)
    _emit(
        out,
        {
            "user_id": args.user,
            "as_of": args.as_of,
            "facts": [f.model_dump(mode="json") for f in facts],
        },
    )
    return EXIT_OK


def cmd_history(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    facts = engine.history(args.user, args.key, args.domain)
    _emit(
        out,
        {
            "user_id": args.user,
            "key": args.key,
            "history": [f.model_dump(mode="json") for f in facts],
        },
    )
    return EXIT_OK


def cmd_confirm(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    event = engine.confirm(args.user, args.fact_id, by=args.by)
    _emit(out, {"status": "confirmed", "fact_id": args.fact_id, "event_id": event.event_id})
    return EXIT_OK


def cmd_retract(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    event = engine.retract(args.user, args.fact_id, args.reason)
    _emit(out, {"status": "retracted", "fact_id": args.fact_id, "event_id": event.event_id})
    return EXIT_OK


def cmd_erase(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    if (args.user is None) == (args.audit_id is None):
        raise MemkgError("give a USER or --audit-id, not both", code="usage")
    if args.audit_id is not None:
        receipts = engine.erase_audit_id(args.audit_id)
        _emit(out, {"receipts": [r.model_dump(mode="json") for r in receipts]})
    else:
        _emit(out, engine.erase(args.user).model_dump(mode="json"))
    return EXIT_OK


def cmd_rebuild(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    report = engine.rebuild()
    rate = report.events / report.seconds if report.seconds else 0.0
    _emit(out, {**report.model_dump(mode="json"), "events_per_second": round(rate)})
    return EXIT_OK


def cmd_graph(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.graph(args.user, args.domain, as_of=args.as_of, fmt=args.format)
    if isinstance(found, str):
        out.write(found)
    else:
        _emit(out, found)
    return EXIT_OK


def _signal_domain(engine: Engine, key: str) -> str:
    found = [d for d in engine.registry.domains() if key in engine.registry.keys(d)]
    if len(found) != 1:
        where = f"in {', '.join(found)}" if found else "in no domain"
        raise MemkgError(f"key {key} is declared {where}: give --domain", code="usage")
    return found[0]


def cmd_signal(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    try:
        value = json.loads(args.value)
    except ValueError:
        value = args.value  # a bare word such as airline:MU or window
    domain = args.domain or _signal_domain(engine, args.key)
    event = engine.signal(args.user, domain, args.key, value, args.kind, session_id=args.session)
    _emit(
        out, {"status": "recorded", "event_id": event.event_id, "seq": event.seq, **event.payload}
    )
    return EXIT_OK


def cmd_paths(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.paths(args.user, args.concept, domain=args.domain, max_depth=args.max_depth)
    _emit(
        out,
        {
            "user_id": args.user,
            "concept": args.concept,
            "paths": [p.model_dump(mode="json") for p in found],
        },
    )
    return EXIT_OK


def _json_or_word(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word such as city:shanghai or window


def cmd_claims(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    context = dict(item.partition("=")[::2] for item in args.context)
    domain = args.domain or _signal_domain(engine, args.key)
    resolution = engine.resolve(
        args.user, domain, args.key, session_id=args.session, turn=args.turn, context=context,
        language=args.language,
    )  # fmt: skip
    _emit(out, resolution.model_dump(mode="json"))
    return EXIT_OK


def cmd_review_list(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    reviews = engine.review_queue(include_resolved=args.all)
    _emit(out, {"reviews": [r.model_dump(mode="json") for r in reviews]})
    return EXIT_OK


def cmd_review_resolve(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    value = _json_or_word(args.value)
    review = engine.resolve_review(args.review_id, value, args.note, args.reviewer)
    _emit(out, review.model_dump(mode="json"))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memkg", description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="memkg.db", help="SQLite store (default ./memkg.db)")
    parser.add_argument("--root", type=Path, help="project folder with schemas/, ontology/, rules/")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("ingest", help="validate and store observations, one JSON object a line")
    p.add_argument("file", help="JSONL file, or - for standard input")
    p.set_defaults(run=cmd_ingest)

    p = sub.add_parser("facts", help="what memory holds about a user")
    p.add_argument("user")
    p.add_argument("--domain")
    p.add_argument("--as-of", type=int, metavar="SEQ", help="as of this log position")
    p.set_defaults(run=cmd_facts)

    p = sub.add_parser("history", help="every value a key ever had, with its status")
    p.add_argument("user")
    p.add_argument("key")
    p.add_argument("--domain")
    p.set_defaults(run=cmd_history)

    p = sub.add_parser("confirm", help="the user confirmed a pending fact")
    p.add_argument("user")
    p.add_argument("fact_id")
    p.add_argument("--by", default="user", help="who confirmed (default: user)")
    p.set_defaults(run=cmd_confirm)

    p = sub.add_parser("retract", help="forget a fact (soft delete, history kept)")
    p.add_argument("user")
    p.add_argument("fact_id")
    p.add_argument("--reason", required=True)
    p.set_defaults(run=cmd_retract)

    p = sub.add_parser("erase", help="erase a user, or the facts carrying an audit id")
    p.add_argument("user", nargs="?")
    p.add_argument("--audit-id", help="erase exactly the facts whose provenance carries it")
    p.set_defaults(run=cmd_erase)

    p = sub.add_parser("rebuild", help="rebuild every projection from the log, and time it")
    p.set_defaults(run=cmd_rebuild)

    p = sub.add_parser("graph", help="a user's graph with edge weights and their breakdowns")
    p.add_argument("user")
    p.add_argument("--domain", help="one memory domain (default: all the user's domains)")
    p.add_argument("--format", choices=("json", "turtle"), default="json")
    p.add_argument("--as-of", type=int, metavar="SEQ", help="as of this log position")
    p.set_defaults(run=cmd_graph)

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
    p.add_argument("--max-depth", type=int, default=3, metavar="N")
    p.set_defaults(run=cmd_paths)

    p = sub.add_parser("claims", help="the competing claims for a key and the arbitration outcome")
    p.add_argument("user")
    p.add_argument("key")
    p.add_argument("--domain", help="needed when several domains declare KEY")
    p.add_argument("--session", help="bring this session's notes in")
    p.add_argument("--turn", help="this turn's source_ref: its instruction comes first")
    p.add_argument("--context", action="append", default=[], metavar="FIELD=VALUE")
    p.add_argument("--language", choices=("en", "zh"), help="of the clarification question")
    p.set_defaults(run=cmd_claims)

    p = sub.add_parser("review", help="the human-review queue of frozen keys")
    review = p.add_subparsers(dest="review_command", required=True, metavar="ACTION")
    q = review.add_parser("list", help="frozen keys waiting for a reviewer")
    q.add_argument("--all", action="store_true", help="include resolved reviews")
    q.set_defaults(run=cmd_review_list)
    q = review.add_parser("resolve", help="settle a frozen key with a value; it unfreezes")
    q.add_argument("review_id")
    q.add_argument("--value", required=True, help="a JSON value or a bare word")
    q.add_argument("--note", required=True)
    q.add_argument("--reviewer", default="reviewer", help="who decided (default: reviewer)")
    q.set_defaults(run=cmd_review_resolve)
    add_decision_commands(sub)
    add_schema_commands(sub)
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
        _emit(out, exc.to_dict())
        refused = exc.code in ("validation.failed", "migration.blocked")
        return EXIT_REFUSED if refused else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
