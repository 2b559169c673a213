"""``memkg schema check | history | migrate``: schema versions and migrations.

``check`` and ``history`` read files only and open no store. Exit status: 0 compatible, or
the dry run passed (PASS or WARN), or the plan applied; 3 incompatible, or BLOCK.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_OK, EXIT_REFUSED, emit, whole
from memkg.cli.progress import Progress
from memkg.config import EngineConfig
from memkg.errors import MemkgError
from memkg.evolution import check_schema_change
from memkg.evolution.dialect import DIALECTS
from memkg.evolution.dry_run import render_text
from memkg.evolution.groups import compare_groups, is_group, render_group_text
from memkg.evolution.history import schema_history
from memkg.evolution.report import Mode
from memkg.userschema import read_json

if TYPE_CHECKING:
    from memkg.engine import Engine


def _read_schema(path: str) -> Any:
    """The schema file ``path``, read as strictly as a root's schemas (``read_json``): too deep,
    duplicate keys, NaN or a file too large name the file and line."""
    return read_json(Path(path), path, code="schema.read")


def cmd_check(config: EngineConfig, args: argparse.Namespace, out: TextIO) -> int:
    old, new = _read_schema(args.old), _read_schema(args.new)
    dialect = args.default_dialect or config.schema_dialect
    if is_group(old) and is_group(new):
        report = compare_groups(old, new, args.mode, dialect)
        compatible, text = report["compatible"], render_group_text(report)
        data: dict[str, Any] = {"kind": "group", **report}
    elif is_group(old) or is_group(new):
        raise MemkgError(
            "compare a key group with a key group, or a JSON Schema with a JSON "
            "Schema (one of the files is a memkg group file)",
            code="usage",
        )
    else:
        found = check_schema_change(old, new, args.mode, default_dialect=dialect)
        compatible, text = found.compatible, found.to_text()
        data = {"kind": "schema", **found.model_dump(mode="json")}
    if args.format == "text":
        out.write(text + "\n")
    else:
        emit(out, data)
    return EXIT_OK if compatible else EXIT_REFUSED


def cmd_history(config: EngineConfig, args: argparse.Namespace, out: TextIO) -> int:
    layers = config.layers
    root = layers.domains().get(args.domain, layers.paths[0])
    found = schema_history(root, args.domain, args.key, config.schema_dialect)
    if not found["groups"]:
        domains = sorted(layers.domains())
        raise MemkgError(
            f"schemas/{args.domain[:64]} holds no key group"
            + (f" declaring {args.key[:128]}" if args.key else "")
            + f" in the roots; domains: {', '.join(domains)} (your own: --root DIR)",
            code="schema.unknown",
        )
    emit(out, found)
    return EXIT_OK


def cmd_migrate(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    progress = Progress("migration: users", sys.stderr, quiet=args.quiet,
                        total=len(engine.store.users()))  # fmt: skip
    if args.apply:
        applied = engine.apply_migration(args.plan, rules=args.rules, waiver=args.waiver,
                                         progress=progress)  # fmt: skip
        progress.close()
        emit(out, applied.model_dump(mode="json"))
        return EXIT_OK
    report = engine.migration_dry_run(args.plan, rules=args.rules, waiver=args.waiver,
                                      decisions=args.decisions, progress=progress)  # fmt: skip
    progress.close()
    if args.format == "text":
        out.write(render_text(report) + "\n")
    else:
        emit(out, report.model_dump(mode="json"))
    return report.exit_status


def add_commands(sub: Any) -> None:
    p = sub.add_parser("schema", help="schema versions: check a change, history, migrate facts")
    schema = p.add_subparsers(dest="schema_command", required=True, metavar="ACTION")
    q = schema.add_parser("check", help="is NEW compatible with OLD (JSON Schemas or key groups)?")
    q.add_argument("old", metavar="OLD.json")
    q.add_argument("new", metavar="NEW.json")
    q.add_argument("--mode", choices=[m.value for m in Mode], default="backward")
    q.add_argument(
        "--default-dialect",
        choices=list(DIALECTS),
        help="dialect of a schema without $schema (default: EngineConfig.schema_dialect, 2020-12)",
    )
    q.add_argument("--format", choices=("json", "text"), default="json")
    q.set_defaults(run=cmd_check, offline=True)
    q = schema.add_parser("history", help="every version of a domain's key groups, or of one key")
    q.add_argument("domain")
    q.add_argument("key", nargs="?")
    q.set_defaults(run=cmd_history, offline=True)
    q = schema.add_parser("migrate", help="dry-run or apply a migration plan over stored facts")
    q.add_argument(
        "plan",
        metavar="PLAN",
        help="a plan file, or a plan's name DOMAIN/NAME (schemas/DOMAIN/"
        "migrations/NAME.yaml in a root, e.g. health/diet_organ_meat)",
    )
    how = q.add_mutually_exclusive_group(required=True)
    how.add_argument("--dry-run", action="store_true", help="write nothing; report and verdict")
    how.add_argument("--apply", action="store_true", help="write migration events (resumable)")
    q.add_argument(
        "--rules",
        help="the rules folder the new schema ships with (default: the rules "
        "in force: the rules/ of each root, --root's included)",
    )
    q.add_argument("--waiver", help="a signed-off waiver file accepting blocking findings")
    q.add_argument(
        "--decisions",
        type=whole(0, 200),
        default=20,
        metavar="N",
        help="recent logged decisions per user to replay (default 20)",
    )
    q.add_argument("--format", choices=("json", "text"), default="json")
    q.set_defaults(run=cmd_migrate)
