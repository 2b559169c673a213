"""``memkg decide | explain | replay | decisions | trace``, ``memkg rules lint | test | diff``."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memkg.cli.common import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, emit, whole
from memkg.errors import ConfigError, MemkgError
from memkg.explain import FORMATS
from memkg.jsontext import LongInteger, read_json
from memkg.model.decision import Decision, DecisionStatus
from memkg.rules.loader import (
    CASES_SUFFIX,
    DOMAIN_FILE,
    RuleFolders,
    file_sources,
    folder_sources,
    read_sources,
    rule_file,
)
from memkg.rules.spec import Finding

if TYPE_CHECKING:
    from memkg.engine import Engine


def summary(decision: Decision) -> dict[str, Any]:
    result = decision.result
    return {
        "decision_id": decision.decision_id,
        "user_id": decision.request.user_id,
        "domain": decision.request.domain,
        "decision": decision.request.decision,
        "status": result.status.value,
        "action": result.action,
        "urgency": result.urgency.value if result.urgency else None,
        "parameters": result.parameters,
        "reason_codes": list(result.reason_codes),
        "message": result.message,
        "problems": list(decision.problems),
        "decided_at": decision.decided_at.isoformat(),
        "as_of_seq": decision.as_of_seq,
        "memory_off": decision.memory_off,
        "merged_ids": list(decision.merged_ids),
        "trace_id": decision.trace_id,
    }


def cmd_decide(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    try:
        context = read_json(args.context) if args.context else {}
    except LongInteger as exc:
        raise MemkgError(f"--context: {exc}", code="value.int_range") from exc
    except ValueError as exc:  # not JSON, too deep, a key given twice
        raise MemkgError(f"--context cannot be read: {exc}", code="usage") from exc
    if not isinstance(context, dict):
        raise MemkgError("--context must be a JSON object", code="usage")
    decision = engine.decide(args.user, args.domain, context, decision=args.decision,
                             session_id=args.session, turn=args.turn)  # fmt: skip
    emit(out, summary(decision))
    return EXIT_REFUSED if decision.status is DecisionStatus.INVALID_INPUT else EXIT_OK


def cmd_explain(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    text = engine.explain(args.decision_id, args.format)
    out.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def cmd_replay(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    report = engine.replay(args.decision_id)
    emit(out, report.model_dump(mode="json", exclude={"replayed"}))
    return EXIT_OK if report.reproduced else EXIT_FAILED


def cmd_decisions(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    found = engine.decisions(args.user, limit=args.limit, before=args.before)
    emit(out, {"user_id": args.user, "decisions": [summary(d) for d in found]})
    return EXIT_OK


def cmd_trace(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    emit(out, engine.trace(args.trace_id).model_dump(mode="json"))
    return EXIT_OK


def _sources(engine: Engine, path: str | None) -> tuple[RuleFolders, dict[str, str], str | None]:
    """The rules folder, the sources to load, and the one file reported on when PATH is a file.

    A file is read alone with its domain's ``domain.yaml`` (``rule_file`` refuses anything not
    laid out as ``<rules>/<domain>/<name>.yaml``); a folder must hold rule files
    (``folder_sources``).
    """
    if path is None:
        return engine.layers.rule_dirs(), read_sources(engine.layers.rule_dirs()), None
    target = Path(path)
    if target.is_file():
        folder, rel = rule_file(target)
        return folder, file_sources(folder, rel), f"rules/{rel}"
    return target, folder_sources(target, or_else="one rule file"), None


def _root_not_in_force(engine: Engine, folders: RuleFolders) -> list[Finding]:
    """A warning when the rules folder linted sits in a root (a ``schemas/`` beside it) that
    is not in force: its rules are read against the schemas of the roots that are."""
    if not isinstance(folders, Path):
        return []
    root = folders.resolve().parent
    if not (root / "schemas").is_dir() or root in {p.resolve() for p in engine.layers.paths}:
        return []
    return [Finding(
        "rules.root_not_in_force",
        f"{folders} sits in the root {root}, which is not in force: its rules are checked "
        f"against the schemas of the roots that are; to check them against its own, run "
        f"memkg --root {shlex.quote(str(folders.parent))} rules lint",
        str(folders), 0, None, "warning",
    )]  # fmt: skip


def cmd_rules_lint(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    folders, sources, only = _sources(engine, args.path)
    from memkg.engine.rule_bundle import folder_findings, lint_sources

    _, findings = lint_sources(sources, engine)
    findings += _root_not_in_force(engine, folders)
    if only is None:  # a folder: what loading it refuses beside its tables (``folder_findings``)
        policy = folders / "policy.yaml" if isinstance(folders, Path) else None
        findings += folder_findings(folders, engine.setup, policy)
    shown = [f for f in findings if only is None or f.file == only]
    errors = [f for f in shown if f.severity == "error"]
    emit(out, {"ok": not errors, "findings": [f.to_dict() for f in shown]})
    return EXIT_FAILED if errors else EXIT_OK


def _cases_of(folder: Path, table: str) -> str:
    """The cases file of one table (``rules/<domain>/<name>.yaml``); it must exist."""
    cases = table.removesuffix(".yaml") + CASES_SUFFIX
    if table.endswith(f"/{DOMAIN_FILE}"):
        raise ConfigError(
            f"{table} declares a domain and has no cases: give a rule table, its cases file, "
            "or the rules folder",
            code="rules.no_cases",
        )
    if not (folder / cases.removeprefix("rules/")).is_file():
        raise ConfigError(
            f"{table} has no cases: write them in {cases}, or give the rules folder",
            code="rules.no_cases",
        )
    return cases


def cmd_rules_test(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    path = args.path
    if path is not None and path.endswith(CASES_SUFFIX) and Path(path).is_file():
        path = path.removesuffix(CASES_SUFFIX) + ".yaml"  # the cases of one table
        if not Path(path).is_file():
            raise ConfigError(
                f"{args.path}: no rule table {Path(path).name} beside these cases",
                code="rules.missing",
            )
    folder, sources, only = _sources(engine, path)
    cases = None if only is None or not isinstance(folder, Path) else _cases_of(folder, only)
    from memkg.engine.intent_cases import run_rule_cases
    from memkg.engine.rule_bundle import compile_rules
    from memkg.rules.cases import CasesReport

    found = run_rule_cases(engine.intent, compile_rules(sources, engine), folder)
    if cases is not None:  # the other tables' cases files are not in this bundle: drop them
        found = CasesReport(
            results=[r for r in found.results if r.case.file == cases],
            findings=[f for f in found.findings if f.file == cases],
            uncovered_rules=found.uncovered_rules,
            uncovered_conditions=found.uncovered_conditions,
        )
    report = found.to_dict()
    if not args.coverage:
        report.pop("uncovered_conditions")
    failed = not report["passed"] or bool(args.coverage and report["uncovered_rules"])
    report["passed"] = not failed  # what the exit code says (--coverage fails on uncovered)
    emit(out, report)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_rules_diff(engine: Engine, args: argparse.Namespace, out: TextIO) -> int:
    from memkg.rules.diff import render_text

    replay = args.replay if args.replay is not None or args.user else 20
    report = engine.rules_diff(Path(args.old), Path(args.new), replay=replay, user=args.user,
                               allow=args.allow or ())  # fmt: skip
    if args.format == "text":
        out.write(render_text(report) + "\n")
    else:
        emit(out, report.model_dump(mode="json"))
    return report.exit_status


def add_commands(sub: Any) -> None:
    p = sub.add_parser("decide", help="what the agent should do for a user now, and why")
    p.add_argument("user")
    p.add_argument("--domain", required=True)
    p.add_argument("--decision", help="rule table of the domain (default: the domain's default)")
    p.add_argument("--context", help='request context as JSON, e.g. \'{"symptom": "fever"}\'')
    p.add_argument("--session", help="the session the decision is made in: its notes count")
    p.add_argument("--turn", help="this turn's source_ref: its instruction counts")
    p.set_defaults(run=cmd_decide)

    p = sub.add_parser("explain", help="the explanation of a logged decision")
    p.add_argument("decision_id")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.set_defaults(run=cmd_explain, reads=True)

    p = sub.add_parser("replay", help="re-make a logged decision as of its log position; compare")
    p.add_argument("decision_id")
    p.set_defaults(run=cmd_replay, reads=True)

    p = sub.add_parser("decisions", help="a user's logged decisions, oldest first")
    p.add_argument("user")
    p.add_argument("--limit", type=whole(1, 1000),
                   help="the newest N (1 to 1000; default: all)")  # fmt: skip
    p.add_argument("--before", metavar="ID",
                   help="only those logged before decision ID (a page further back)")  # fmt: skip
    p.set_defaults(run=cmd_decisions, reads=True)

    p = sub.add_parser(
        "trace", help="what a decide, profile or recall considered, scored, dropped and used"
    )
    p.add_argument("trace_id", help="the trace_id a decide (or a profile, a recall) returned")
    p.set_defaults(run=cmd_trace, reads=True)

    p = sub.add_parser("rules", help="check rule files: lint, or run their cases")
    rules = p.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    q = rules.add_parser("lint", help="schema, keys, types, actions, overlaps, defaults")
    q.add_argument(
        "path",
        nargs="?",
        help="rules folder, or one <rules>/<domain>/<name>.yaml with its domain (default: every "
        "domain in force: the rules/ of each root, --root's included)",
    )
    q.set_defaults(run=cmd_rules_lint, storeless=True)
    q = rules.add_parser("test", help="run rules/**/*.cases.yaml")
    q.add_argument(
        "path",
        nargs="?",
        help="rules folder, or one rule file or its .cases.yaml (default: every domain in force: "
        "the rules/ of each root, --root's included)",
    )
    q.add_argument(
        "--coverage",
        action="store_true",
        help="also list conditions never exercised; fail on rules never matched",
    )
    q.set_defaults(run=cmd_rules_test, storeless=True)
    q = rules.add_parser(
        "diff",
        help="replay logged decisions under OLD and NEW rules: what changes, and a verdict",
    )
    q.add_argument("old", metavar="OLD_DIR", help="the rules folder in use")
    q.add_argument("new", metavar="NEW_DIR", help="the rules folder proposed")
    q.add_argument(
        "--replay",
        type=whole(0),
        metavar="N",
        help="the last N logged decisions (default 20; with --user, all of the user's)",
    )
    q.add_argument("--user", help="replay this user's decisions only")
    q.add_argument(
        "--allow",
        action="append",
        metavar="TABLE",
        help="a rule table (DOMAIN/TABLE) or domain meant to change: its changed outcomes "
        "warn instead of blocking (repeatable)",
    )
    q.add_argument("--format", choices=("json", "text"), default="json")
    q.add_argument("--json", dest="format", action="store_const", const="json",
                   help="the same as --format json")  # fmt: skip
    q.set_defaults(run=cmd_rules_diff, reads=True)  # a mistyped --db would pass the gate
