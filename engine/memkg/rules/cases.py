"""Rule tests: ``rules/<domain>/<name>.cases.yaml`` beside the table ``<name>.yaml``.

Each case gives facts, graph fixtures (edge weights that replace computed ones), a clock
(``now``) and a request context, and expects a status, action, urgency, parameters, selected
rules, reason codes, suppressed rules, ``why_not`` (rule → index of its first failing
condition) or left-out facts. Coverage: a rule is exercised when some case makes it match; a
condition when some case has it hold and some case has it be the first to fail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memkg.model.decision import Arbitration, LeftOut, Result
from memkg.rules.evaluator import Evaluation
from memkg.rules.loader import (
    CASES_SUFFIX,
    RuleFolders,
    SchemaRoot,
    rule_domains,
    schema_findings,
)
from memkg.rules.spec import Finding, RuleBundle, RuleTable
from memkg.yamlfile import Document, YamlError, load_text, read_text


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    line: int
    table: RuleTable
    now: datetime
    facts: tuple[dict[str, Any], ...]
    graph: tuple[dict[str, Any], ...]
    context: dict[str, Any]
    expect: dict[str, Any]


@dataclass(frozen=True)
class CaseOutcome:
    result: Result
    arbitration: Arbitration | None
    evaluation: Evaluation | None
    left_out: tuple[LeftOut, ...] = ()
    refused: tuple[str, ...] = ()
    """Why facts of the case could not be stored (a write of them would be refused)."""
    problems: tuple[str, ...] = ()
    """Why the case's request was refused (``invalid_input``): its context, say."""


@dataclass(frozen=True)
class CaseResult:
    case: Case
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


@dataclass
class CasesReport:
    results: list[CaseResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    uncovered_rules: list[str] = field(default_factory=list)
    uncovered_conditions: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.findings and all(r.passed for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "cases": len(self.results),
            "failed": [
                {
                    "case": r.case.name,
                    "file": r.case.file,
                    "line": r.case.line,
                    "failures": list(r.failures),
                }
                for r in self.results
                if not r.passed
            ],
            "findings": [f.to_dict() for f in self.findings],
            "uncovered_rules": self.uncovered_rules,
            "uncovered_conditions": self.uncovered_conditions,
        }


Runner = Callable[[Case], CaseOutcome]


def load_cases(
    folder: RuleFolders, bundle: RuleBundle, root: SchemaRoot = None
) -> tuple[list[Case], list[Finding]]:
    """The cases of every table in ``bundle``; ``root``: where ``schemas/rules/`` is read."""
    cases: list[Case] = []
    findings: list[Finding] = []
    paths = [(domain, path) for domain, sub in rule_domains(folder).items()
             for path in sorted(sub.glob(f"*{CASES_SUFFIX}"))]  # fmt: skip
    for domain, path in paths:
        rel = f"rules/{domain}/{path.name}"
        name = path.name.removesuffix(CASES_SUFFIX)
        table = bundle.tables.get((domain, name))
        if table is None:
            findings.append(
                Finding(
                    "cases.no_table",
                    f"no rule table {domain}/{name}.yaml for these cases",
                    rel,
                    1,
                )
            )
            continue
        try:
            doc = load_text(read_text(path, rel), rel)
        except YamlError as exc:
            findings.append(Finding("cases.yaml", exc.message, rel, exc.line))
            continue
        problems = schema_findings(doc, "cases-file", root)
        findings += problems
        if not problems:
            for index, raw in enumerate(doc.data["cases"]):
                now = _time(raw["now"])
                if now is not None and not _EARLIEST <= now.replace(tzinfo=None) <= _LATEST:
                    findings.append(
                        Finding(
                            "cases.now",
                            f"case {raw['name']!r}: now {raw['now']!r} is too close to year 1 "
                            "or 9999 for the times a decision works out around it (a day "
                            "either side): write a time from 0002 to 9998",
                            doc.file,
                            doc.line(("cases", index, "now")),
                        )
                    )
                    continue
                if now is None:
                    findings.append(
                        Finding(
                            "cases.now",
                            f"case {raw['name']!r}: now {raw['now']!r} is not an ISO 8601 "
                            "time; write it like '2026-05-01T09:00:00Z'",
                            doc.file,
                            doc.line(("cases", index, "now")),
                        )
                    )
                    continue
                cases.append(_case(doc, table, index, raw, now))
    return cases, findings


_EARLIEST, _LATEST = datetime(2, 1, 1), datetime(9998, 12, 31)
"""The ``now`` a case may have (as written, before its offset): a day's margin either side
for the time zones a decision reads it in."""


def _time(text: str) -> datetime | None:
    """``text`` as a time, or ``None`` when the schema's pattern let a non-time through."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _case(doc: Document, table: RuleTable, index: int, raw: dict[str, Any], now: datetime) -> Case:
    return Case(
        name=raw["name"],
        file=doc.file,
        line=doc.line(("cases", index)),
        table=table,
        now=now,
        facts=tuple(raw.get("facts", ())),
        graph=tuple(raw.get("graph", ())),
        context=dict(raw.get("context", {})),
        expect=dict(raw["expect"]),
    )


def check(case: Case, outcome: CaseOutcome) -> CaseResult:
    expect, result = case.expect, outcome.result
    failures = list(outcome.refused)
    if outcome.problems and expect.get("status") != "invalid_input":
        failures.append("the request was refused: " + "; ".join(outcome.problems))
    actual: Mapping[str, Any] = {
        "status": result.status.value,
        "action": result.action,
        "urgency": result.urgency.value if result.urgency else None,
        "parameters": result.parameters,
        "reason_codes": list(result.reason_codes),
        "rules": list(outcome.arbitration.selected) if outcome.arbitration else [],
        "suppressed": [s.rule_id for s in outcome.arbitration.suppressed]
        if outcome.arbitration
        else [],
        "left_out": sorted(f"{lo.key}:{lo.reason}" for lo in outcome.left_out),
    }
    for name, wanted in expect.items():
        if name == "why_not":
            failures += _why_not(wanted, outcome.evaluation)
        elif name in ("rules", "reason_codes", "suppressed", "left_out"):
            if sorted(wanted) != sorted(actual[name]):
                failures.append(f"{name}: expected {sorted(wanted)}, got {sorted(actual[name])}")
        elif actual[name] != wanted:
            failures.append(f"{name}: expected {wanted!r}, got {actual[name]!r}")
    return CaseResult(case, tuple(failures))


def _why_not(wanted: dict[str, int], evaluation: Evaluation | None) -> list[str]:
    checks = {c.rule.id: c for c in (evaluation.checks if evaluation else ())}
    failures = []
    for rule_id, index in wanted.items():
        found = checks.get(rule_id)
        if found is None:
            failures.append(f"why_not {rule_id}: the rule matched (or is unknown)")
        elif found.failing != index:
            failures.append(
                f"why_not {rule_id}: expected condition {index} to fail first, got {found.failing}"
            )
    return failures


def run_cases(
    folder: RuleFolders, bundle: RuleBundle, runner: Runner, root: SchemaRoot = None
) -> CasesReport:
    cases, findings = load_cases(folder, bundle, root)
    report = CasesReport(findings=findings)
    fired: set[str] = set()
    held: set[tuple[str, int]] = set()
    failed: set[tuple[str, int]] = set()
    for case in cases:
        outcome = runner(case)
        report.results.append(check(case, outcome))
        if outcome.evaluation is None:
            continue
        for candidate in outcome.evaluation.candidates:
            fired.add(candidate.rule_id)
            rule = next(r for r in case.table.rules if r.id == candidate.rule_id)
            held.update((rule.id, c.index) for c in rule.conditions)
        for rule_check in outcome.evaluation.checks:
            rule_id = rule_check.rule.id
            held.update((rule_id, i) for i, ok in enumerate(rule_check.holds) if ok)
            if rule_check.failing is not None:
                failed.add((rule_id, rule_check.failing))
    for table in sorted(bundle.tables.values(), key=lambda t: t.file):
        for rule in table.rules:
            if rule.id not in fired:
                report.uncovered_rules.append(f"{rule.file}:{rule.line} {rule.id}")
            for cond in rule.conditions:
                if (rule.id, cond.index) not in held or (rule.id, cond.index) not in failed:
                    never = "held" if (rule.id, cond.index) not in held else "failed first"
                    report.uncovered_conditions.append(
                        f"{rule.file}:{cond.line} {rule.id} condition {cond.index} never {never}"
                    )
    return report
