"""What a rule change would do: two bundles compared, and logged decisions re-made under both.

Each logged decision is made twice, as of its log position and with its recorded clock: once
with the old bundle, once with the new one. Comparing the two (not the record) isolates the
rule change from anything else that differs since the decision was logged.

Verdict policy, in order (the vocabulary of the schema migration dry run):

1. BLOCK when a finding of severity ``block`` is not allowed: a bundle that does not load or
   lint (``rules.invalid``, with file and line), a replayed decision whose status, action,
   parameters or urgency would change (``decision.outcome_changed``) unless its rule table is
   listed in ``allow``, a replay that fails (``decision.replay_failed``);
2. WARN when a reviewer should look: an allowed outcome change; the same outcome for another
   reason (``decision.reason_changed``: reason codes or message) or from other rules
   (``decision.rules_changed``: the selected rules differ);
3. PASS otherwise. A decision whose old replay differs from its record (it was made with
   other rules) is reported as ``info``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memkg.model.decision import Decision, Result
from memkg.model.gate import EXIT_STATUS, SEVERITY_ORDER, GateFinding, Verdict, verdict_of
from memkg.rules.spec import Finding as RuleFinding
from memkg.rules.spec import Rule, RuleBundle, RuleTable

Aspect = Literal["status", "action", "parameters", "urgency", "reason", "rules"]
OUTCOME: tuple[Aspect, ...] = ("status", "action", "parameters", "urgency")
TABLE_PARTS = frozenset({"table", "hit_policy", "default", "allow_no_match", "order"})


class Finding(GateFinding):
    """One thing the diff found; ``subject`` is a decision id or a rule id."""

    table: str | None = None
    rules: tuple[str, ...] = ()
    allowed: bool = False

    @property
    def excused(self) -> bool:
        return self.allowed


class RuleChange(BaseModel):
    """A rule, a table's policy or a domain file that differs between the bundles."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table: str
    """``domain/table``, or ``domain`` for a change of ``domain.yaml``."""
    subject: str
    """A rule id, or what changed in the table or domain (``hit_policy``, ``default``, ...)."""
    change: Literal["added", "removed", "changed"]
    file: str
    line: int


class Outcome(BaseModel):
    """What a decision came out as, and which rules decided it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: str
    action: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    urgency: str | None = None
    reason_codes: tuple[str, ...] = ()
    message: str = ""
    matched: tuple[str, ...] = ()
    selected: tuple[str, ...] = ()

    @classmethod
    def of(cls, decision: Decision) -> Outcome:
        result: Result = decision.result
        arbitration = decision.arbitration
        return cls(
            status=result.status.value,
            action=result.action,
            parameters=dict(result.parameters),
            urgency=result.urgency.value if result.urgency else None,
            reason_codes=result.reason_codes,
            message=result.message,
            matched=arbitration.matched if arbitration else (),
            selected=arbitration.selected if arbitration else (),
        )

    def describe(self) -> str:
        action = f" {self.action}" if self.action else ""
        urgency = f" ({self.urgency})" if self.urgency else ""
        return f"{self.status}{action}{urgency}"


class DecisionChange(BaseModel):
    """One replayed decision: what it was under the old bundle and would be under the new."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    user_id: str
    table: str
    changed: tuple[Aspect, ...]
    """Empty when both bundles decide alike."""
    responsible: tuple[str, ...] = ()
    before: Outcome
    after: Outcome


class RulesDiffReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    old: str
    new: str
    old_digest: str | None
    new_digest: str | None
    verdict: Verdict
    counts: dict[str, int]
    rule_changes: tuple[RuleChange, ...]
    decisions: tuple[DecisionChange, ...]
    findings: tuple[Finding, ...]
    allow: tuple[str, ...] = ()

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "block" and not f.allowed]


# -- the bundles --------------------------------------------------------------------------


def _rule_text(rule: Rule) -> tuple[Any, ...]:
    """What a rule says, without where it stands (its file, line and position)."""
    return (
        [c.raw for c in rule.conditions],
        rule.output.model_dump(mode="json"),
        rule.reason_code,
        rule.explain,
        rule.version,
        str(rule.effective_from),
        str(rule.effective_until),
    )


def _table_parts(table: RuleTable) -> dict[str, Any]:
    default = table.default
    return {
        "hit_policy": table.hit_policy.model_dump(mode="json"),
        "default": None
        if default is None
        else (default.output.model_dump(mode="json"), default.reason_code, default.explain),
        "allow_no_match": table.allow_no_match,
        "order": [r.id for r in table.rules],
    }


def rule_changes(old: RuleBundle, new: RuleBundle) -> list[RuleChange]:
    """Every rule, table part and domain file that differs between ``old`` and ``new``."""
    found: list[RuleChange] = []
    for key in sorted(set(old.tables) | set(new.tables)):
        a, b = old.tables.get(key), new.tables.get(key)
        name = f"{key[0]}/{key[1]}"
        if a is None or b is None:
            table = b or a
            assert table is not None
            found.append(RuleChange(table=name, subject="table", file=table.file,
                                    line=table.policy_line,
                                    change="added" if a is None else "removed"))  # fmt: skip
            continue
        was, now = _table_parts(a), _table_parts(b)
        for part in was:
            added_or_removed = part == "order" and set(was[part]) != set(now[part])
            if was[part] != now[part] and not added_or_removed:
                found.append(RuleChange(table=name, subject=part, change="changed", file=b.file,
                                        line=b.policy_line))  # fmt: skip
        rules_a = {r.id: r for r in a.rules}
        rules_b = {r.id: r for r in b.rules}
        for rule_id in sorted(set(rules_a) | set(rules_b)):
            ra, rb = rules_a.get(rule_id), rules_b.get(rule_id)
            if ra is None or rb is None:
                rule = rb or ra
                assert rule is not None
                found.append(RuleChange(table=name, subject=rule_id, file=rule.file,
                                        line=rule.line,
                                        change="added" if ra is None else "removed"))  # fmt: skip
            elif _rule_text(ra) != _rule_text(rb):
                found.append(RuleChange(table=name, subject=rule_id, change="changed",
                                        file=rb.file, line=rb.line))  # fmt: skip
    for domain in sorted(set(old.domains) | set(new.domains)):
        da, db = old.domains.get(domain), new.domains.get(domain)
        spec = db or da
        assert spec is not None
        if da is None or db is None:
            found.append(RuleChange(table=domain, subject="domain", file=spec.file, line=1,
                                    change="added" if da is None else "removed"))  # fmt: skip
            continue
        for part in ("actions", "context", "default_decision", "status_actions"):
            if getattr(da, part) != getattr(db, part):
                found.append(RuleChange(table=domain, subject=part, change="changed",
                                        file=db.file, line=1))  # fmt: skip
    return found


def bundle_findings(which: str, findings: Iterable[RuleFinding]) -> list[Finding]:
    """A bundle's load and lint errors, as blocking findings with file and line."""
    return [
        Finding(
            code="rules.invalid",
            severity="block",
            file=f.file,
            line=f.line,
            rules=(f.rule_id,) if f.rule_id else (),
            subject=f.rule_id,
            message=f"the {which} rules do not load: {f.code}: {f.message}",
        )
        for f in findings
        if f.severity == "error"
    ]


# -- the decisions ------------------------------------------------------------------------


def compare(
    recorded: Decision,
    before: Decision,
    after: Decision,
    changes: Collection[RuleChange],
) -> DecisionChange:
    """What differs between the old bundle's and the new bundle's replay of ``recorded``."""
    a, b = Outcome.of(before), Outcome.of(after)
    changed: list[Aspect] = []
    for aspect in OUTCOME:
        if getattr(a, aspect) != getattr(b, aspect):
            changed.append(aspect)
    if (a.reason_codes, a.message) != (b.reason_codes, b.message):
        changed.append("reason")
    if a.selected != b.selected:
        changed.append("rules")
    request = recorded.request
    table = f"{request.domain}/{request.decision}" if request.decision else request.domain
    return DecisionChange(
        decision_id=recorded.decision_id,
        user_id=request.user_id,
        table=table,
        changed=tuple(changed),
        responsible=responsible(request.domain, table, a, b, changes) if changed else (),
        before=a,
        after=b,
    )


def responsible(
    domain: str, table: str, a: Outcome, b: Outcome, changes: Collection[RuleChange]
) -> tuple[str, ...]:
    """The changed rules that matched under either bundle, and the changed parts of the
    table and of its domain; failing those, the rules each bundle selected."""
    touched = set(a.matched) | set(b.matched)
    found: list[str] = []
    for c in changes:
        if c.table == table and c.subject in TABLE_PARTS:
            found.append(f"{table}: {c.subject} {c.change}")
        elif c.table == table and c.subject in touched:
            found.append(c.subject)
        elif c.table == domain:
            found.append(f"{domain}: {c.subject} {c.change}")
    if not found:
        found = sorted(set(a.selected) | set(b.selected))
    return tuple(dict.fromkeys(found))


def decision_findings(change: DecisionChange, recorded: Decision, allowed: bool) -> list[Finding]:
    found: list[Finding] = []
    where = f"decision {change.decision_id} ({change.user_id}, {change.table})"
    rules = change.responsible
    because = f"; responsible: {', '.join(rules)}" if rules else ""
    if any(aspect in OUTCOME for aspect in change.changed):
        found.append(Finding(
            code="decision.outcome_changed", severity="block", subject=change.decision_id,
            table=change.table, rules=rules, allowed=allowed,
            message=f"{where} was {change.before.describe()}, would be "
            f"{change.after.describe()} ({', '.join(change.changed)} changed)"
            f"{because}"))  # fmt: skip
    elif "reason" in change.changed:
        found.append(Finding(
            code="decision.reason_changed", severity="warn", subject=change.decision_id,
            table=change.table, rules=rules,
            message=f"{where} is still {change.before.describe()}, for another reason: "
            f"{_reason(change.before)} → {_reason(change.after)}{because}"))  # fmt: skip
    elif "rules" in change.changed:
        found.append(Finding(
            code="decision.rules_changed", severity="warn", subject=change.decision_id,
            table=change.table, rules=rules,
            message=f"{where} is still {change.before.describe()}, selected by other rules: "
            f"{', '.join(change.before.selected) or 'none'} → "
            f"{', '.join(change.after.selected) or 'none'}{because}"))  # fmt: skip
    if Outcome.of(recorded).model_dump(exclude={"matched"}) != change.before.model_dump(
        exclude={"matched"}
    ):
        found.append(Finding(
            code="decision.recorded_differs", severity="info", subject=change.decision_id,
            table=change.table,
            message=f"{where} was recorded as {Outcome.of(recorded).describe()} but the old "
            f"rules make it {change.before.describe()}: it was made with other rules "
            "(compared against the old rules' replay)"))  # fmt: skip
    return found


def _reason(outcome: Outcome) -> str:
    return ", ".join(outcome.reason_codes) or repr(outcome.message)


def is_allowed(table: str, allow: Collection[str]) -> bool:
    """``allow`` names rule tables (``domain/table``) or whole domains."""
    return table in allow or table.split("/", 1)[0] in allow


def assess(
    old: str,
    new: str,
    digests: tuple[str | None, str | None],
    changes: Collection[RuleChange],
    replayed: Iterable[tuple[Decision, DecisionChange | None, str | None]],
    other: Iterable[Finding] = (),
    *,
    allow: Collection[str] = (),
) -> RulesDiffReport:
    """Findings and verdict; ``replayed`` holds (record, change, error of a failed replay)."""
    findings = list(other)
    listed: list[DecisionChange] = []
    counts = {"replayed": 0, "unchanged": 0, "outcome_changed": 0, "reason_changed": 0,
              "rules_changed": 0, "failed": 0, "recorded_differs": 0}  # fmt: skip
    for recorded, change, error in replayed:
        counts["replayed"] += 1
        if change is None:
            counts["failed"] += 1
            request = recorded.request
            findings.append(Finding(
                code="decision.replay_failed", severity="block", subject=recorded.decision_id,
                table=f"{request.domain}/{request.decision}",
                message=f"decision {recorded.decision_id} ({request.user_id}) could not be "
                f"re-made: {error}"))  # fmt: skip
            continue
        listed.append(change)
        found = decision_findings(change, recorded, is_allowed(change.table, allow))
        for f in found:
            counts[f.code.removeprefix("decision.")] += 1
        if not change.changed:
            counts["unchanged"] += 1
        findings += found
    verdict = verdict_of(findings)
    order = SEVERITY_ORDER
    findings.sort(key=lambda f: (order[f.severity], f.allowed, f.file or "", f.line or 0))
    return RulesDiffReport(
        old=old, new=new, old_digest=digests[0], new_digest=digests[1], verdict=verdict,
        counts=counts, rule_changes=tuple(changes), decisions=tuple(listed),
        findings=tuple(findings), allow=tuple(sorted(allow)),
    )  # fmt: skip


def render_text(report: RulesDiffReport) -> str:
    """A readable summary: verdict, counts, rule changes, findings."""

    def short(digest: str | None) -> str:
        return digest[:12] if digest else "(does not load)"

    lines = [
        f"{report.verdict}: rules {report.old} ({short(report.old_digest)}) → {report.new} "
        f"({short(report.new_digest)})"
    ]
    lines.append("decisions: " + ", ".join(f"{k} {v}" for k, v in report.counts.items()))
    for c in report.rule_changes:
        lines.append(f"{c.change} {c.table} {c.subject} ({c.file}:{c.line})")
    for f in report.findings:
        where = f" {f.file}:{f.line}" if f.file and f.line else f" {f.file}" if f.file else ""
        allowed = " (allowed)" if f.allowed else ""
        lines.append(f"[{f.severity}]{allowed} {f.code}{where}: {f.message}")
    if report.allow:
        lines.append("allowed to change: " + ", ".join(report.allow))
    return "\n".join(lines)
