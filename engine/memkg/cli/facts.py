"""Fact-layer commands: ingest, facts, history, confirm, retract, erase, rebuild."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_OK, EXIT_REFUSED, SEQ_MAX, emit, whole
from memkg.cli.progress import Progress
from memkg.config import EngineConfig
from memkg.errors import MemkgError
from memkg.jsontext import LongInteger, read_json
from memkg.model.report import Problem, ValidationReport
from memkg.validate.limits import json_text_depth

if TYPE_CHECKING:
    from memkg.engine import Engine

_BATCH = 500


def _read_jsonl(
    path: str, config: EngineConfig
) -> Iterator[tuple[int, dict[str, Any] | ValidationReport]]:
    """(line number, observation or the report of why the line is not one)."""
    try:
        handle = (
            sys.stdin if path == "-" else open(path, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
        )
    except OSError as exc:
        raise MemkgError(
            f"cannot read {path}: {exc.strerror}; give a JSONL file, or - for standard input",
            code="input.unreadable",
        ) from exc
    limits = config.limits
    with handle:
        for number, line in enumerate(handle, start=1):
            if number == 1:  # a byte-order mark, as some editors save UTF-8: not content
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            problem = None
            # at most 4 bytes a character: only a line that could be too long is encoded
            size = len(line) if len(line) * 4 <= limits.max_line_bytes else len(
                line.encode("utf-8", "surrogateescape")
            )  # fmt: skip
            if size > limits.max_line_bytes:
                problem = (
                    "limit.size",
                    f"line of {size:,} bytes exceeds {limits.max_line_bytes:,}",
                )
            elif json_text_depth(line, limits.max_depth + 2) > limits.max_depth + 2:
                problem = ("limit.depth", f"nested deeper than {limits.max_depth} levels")
            else:
                try:
                    data = read_json(line)
                except LongInteger as exc:
                    problem = ("value.int_range", str(exc))
                except ValueError as exc:  # not JSON, too deep, a key twice in one object
                    problem = ("input.json", f"the line cannot be read: {exc}")
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
                emit(
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
                emit(out, {"line": number, "result": "rejected", **problems})
        pending.clear()

    for number, item in _read_jsonl(args.file, engine.config):
        if isinstance(item, ValidationReport):
            flush()
            refused = True
            emit(out, {"line": number, "result": "rejected", **item.model_dump(mode="json")})
            continue
        pending.append((number, item))
        if len(pending) >= _BATCH:
            flush()
    flush()
    return EXIT_REFUSED if refused else EXIT_OK


def cmd_facts(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    facts = engine.facts(args.user, args.domain, as_of=args.as_of)
    emit(
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
    emit(
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
    emit(out, {"status": "confirmed", "fact_id": args.fact_id, "event_id": event.event_id})
    return EXIT_OK


def cmd_retract(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    event = engine.retract(args.user, args.fact_id, args.reason)
    emit(out, {"status": "retracted", "fact_id": args.fact_id, "event_id": event.event_id})
    return EXIT_OK


def cmd_erase(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    if (args.user is None) == (args.audit_id is None):
        raise MemkgError("give either a USER or --audit-id ID (exactly one)", code="usage")
    if args.audit_id is not None:
        receipts = engine.erase_audit_id(args.audit_id)
        emit(out, {"receipts": [r.model_dump(mode="json") for r in receipts]})
    elif getattr(engine.store, "database", None) is None:  # in memory: no keys beside it
        emit(out, engine.erase(args.user).model_dump(mode="json"))
    else:  # keys, grants and the access audit go in the same transaction
        from memkg.service.commands import access_store

        keys = access_store(args)
        try:
            emit(out, engine.erase(args.user, also=(keys,)).model_dump(mode="json"))  # type: ignore[arg-type]
        finally:
            keys.close()
    return EXIT_OK


def cmd_rebuild(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    progress = Progress("rebuild: events", sys.stderr, quiet=args.quiet)
    report = engine.rebuild(progress=progress)
    progress.close()
    rate = report.events / report.seconds if report.seconds else 0.0
    emit(out, {**report.model_dump(mode="json"), "events_per_second": round(rate)})
    return EXIT_OK


def add_commands(sub: Any) -> None:
    p = sub.add_parser("ingest", help="validate and store observations, one JSON object a line")
    p.add_argument("file", help="JSONL file, or - for standard input")
    p.set_defaults(run=cmd_ingest)

    p = sub.add_parser("facts", help="what memory holds about a user")
    p.add_argument("user")
    p.add_argument("--domain")
    p.add_argument("--as-of", type=whole(0, SEQ_MAX), metavar="SEQ",
                   help="as of this log position")  # fmt: skip
    p.set_defaults(run=cmd_facts, reads=True)

    p = sub.add_parser("history", help="every value a key ever had, with its status")
    p.add_argument("user")
    p.add_argument("key")
    p.add_argument("--domain")
    p.set_defaults(run=cmd_history, reads=True)

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
    p.set_defaults(run=cmd_rebuild, reads=True)
