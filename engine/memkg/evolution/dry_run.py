"""The dry run's verdict: what a plan would do to stored facts, rules and decisions.

Verdict policy, in order:

1. BLOCK when a finding of severity ``block`` is not covered by a valid waiver: a stored fact
   that is unmappable or invalid under the new version, a rule or rule case that breaks;
2. WARN when something needs a reviewer's eye: lossy or dropped facts, rules that read a
   changed key, decisions whose outcome would change, a key's sensitivity, consent
   requirement or ``x-pii: hash`` marking changing, or blocking findings a waiver accepted;
3. PASS otherwise. Explicit unknowns and questions for the user are reported, not warned
   about: they are the plan saying honestly what the old data does not know.
"""

from __future__ import annotations

from bisect import insort
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from memkg.model.gate import EXIT_STATUS, SEVERITY_ORDER, GateFinding, Verdict, verdict_of

from .check import check_schema_change
from .migration import MigrationPlan
from .outcome import FactOutcome, KeyPolicy, Place, effective_steps
from .waiver import Waiver


class Finding(GateFinding):
    """One thing the dry run found; ``subject`` is a fact, rule or decision id."""

    key: str | None = None
    waived: bool = False

    @property
    def excused(self) -> bool:
        return self.waived


class KeyChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    change: Literal["removed", "renamed", "changed", "added"]
    new_keys: tuple[str, ...] = ()
    detail: str = ""


class DryRunReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    migration: str
    plan_file: str
    plan_digest: str
    domain: str
    source: str
    target: str
    verdict: Verdict
    counts: dict[str, int]
    """Outcomes by status (a merge's facts from one source in one slot make one outcome),
    and ``facts``: every stored live fact the plan reads."""
    examples: dict[str, list[dict[str, Any]]]
    key_changes: tuple[KeyChange, ...]
    findings: tuple[Finding, ...]
    unlisted: int = 0
    """Fact findings beyond the listing limit (counted, not listed)."""
    waiver: dict[str, Any] | None = None

    @property
    def exit_status(self) -> int:
        return EXIT_STATUS[self.verdict]


def key_changes(plan: MigrationPlan, old: Mapping[str, KeyPolicy], new: Mapping[str, KeyPolicy]
                ) -> list[KeyChange]:  # fmt: skip
    """How each old key fares: removed, renamed, changed (its schema differs) or added."""
    found = []
    for step in effective_steps(plan, old, new):
        targets = tuple(t.key for t in step.targets)
        for key in step.keys:
            renamed = step.renames().get(key)
            if renamed:
                found.append(KeyChange(key=key, change="renamed", new_keys=(renamed,)))
            elif key not in targets or key not in new:
                what = "dropped by the plan" if step.kind == "drop" else "moved to " + (
                    ", ".join(targets) or "nothing")  # fmt: skip
                found.append(KeyChange(key=key, change="removed", new_keys=targets, detail=what))
            elif old[key].schema != new[key].schema:
                report = check_schema_change(old[key].schema, new[key].schema, "full")
                codes = sorted({c.code for c in report.changes if c.severity != "safe"})
                detail = "; ".join([", ".join(codes) or "compatible both ways",
                                    *_pii_changes(old[key], new[key])])  # fmt: skip
                found.append(KeyChange(key=key, change="changed", new_keys=targets, detail=detail))
    for key in sorted(set(new) - set(old)):
        found.append(KeyChange(key=key, change="added"))
    return sorted(found, key=lambda c: (c.key, c.change))


def policy_findings(plan: MigrationPlan, old: Mapping[str, KeyPolicy], new: Mapping[str, KeyPolicy]
                    ) -> list[Finding]:  # fmt: skip
    """Changes in sensitivity, hashing, kind or consent requirement from an old key to the
    keys it feeds."""
    found = []
    for step in effective_steps(plan, old, new):
        for key in step.keys:
            for target in (t.key for t in step.targets if t.key in new):
                a, b = old[key], new[target]
                where = key if key == target else f"{key} → {target}"
                if a.sensitivity != b.sensitivity:
                    found.append(
                        Finding(
                            code="key.sensitivity_changed",
                            severity="warn",
                            key=target,
                            message=f"{where}: sensitivity {a.sensitivity.value} → "
                            f"{b.sensitivity.value}",
                            file=plan.file,
                            line=step.line,
                        )
                    )
                added, removed = _hashing(a, b)
                if added:
                    found.append(Finding(
                        code="key.pii_hashed", severity="warn", key=target, file=plan.file,
                        line=step.line or None, message=f"{where}: x-pii: hash added at "
                        f"{_paths(added)}: the apply replaces stored clear text there by the "
                        "user's HMAC; the superseded facts keep the clear text in their history "
                        "until the user (or the audit id) is erased"))  # fmt: skip
                if removed:
                    found.append(Finding(
                        code="key.pii_unhashed", severity="warn", key=target, file=plan.file,
                        line=step.line or None, message=f"{where}: x-pii: hash removed at "
                        f"{_paths(removed)}: new values are stored as clear text; a stored HMAC "
                        "cannot be turned back, so facts that hold one are unmappable",
                    ))  # fmt: skip
                if a.kind is not b.kind:
                    found.append(Finding(
                        code="key.kind_changed", severity="warn", key=target, file=plan.file,
                        line=step.line, message=f"{where}: kind {a.kind.value} → {b.kind.value}: "
                        "the apply writes the facts anew with the new kind (a state expires "
                        "its window after it was observed)"))  # fmt: skip
                if a.consent != b.consent:
                    need = "now requires" if b.consent else "no longer requires"
                    found.append(Finding(code="key.consent_changed", severity="warn", key=target,
                                         message=f"{where} {need} the user's consent",
                                         file=plan.file, line=step.line))  # fmt: skip
    return found


def _hashing(a: KeyPolicy, b: KeyPolicy) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The ``x-pii: hash`` paths ``b`` adds to ``a``, and those it removes."""
    before, after = set(a.hashed_paths), set(b.hashed_paths)
    return sorted(after - before), sorted(before - after)


def _pii_changes(a: KeyPolicy, b: KeyPolicy) -> list[str]:
    added, removed = _hashing(a, b)
    return ([f"x-pii: hash added at {_paths(added)}"] * bool(added)
            + [f"x-pii: hash removed at {_paths(removed)}"] * bool(removed))  # fmt: skip


def _paths(paths: Sequence[tuple[str, ...]]) -> str:
    return ", ".join("/" + "/".join(p) for p in paths)


def assess(plan: MigrationPlan, outcomes: Sequence[FactOutcome], changes: Sequence[KeyChange],
           other: Sequence[Finding], *, waiver: Waiver | None = None, now: datetime,
           examples: int = 5, listed: int = 50) -> DryRunReport:  # fmt: skip
    """Count the outcomes, list findings, apply the waiver and give the verdict."""
    tally = Tally(plan, waiver, now=now, examples=examples, listed=listed)
    for n, o in enumerate(outcomes):
        tally.add((n,), o)
    return tally.report(changes, other)


Group = tuple[int, bool, str]
"""Where a fact finding is listed: severity (by ``SEVERITY_ORDER``), waived, code."""
_RANK = {"lossy": 1, "unknown": 2, "questions": 3}
"""The order of an outcome's flags after its status, as examples are shown."""


class Tally:
    """``assess`` as outcomes come, in any order, each with its place in the order they are
    listed (``outcome.Place``): counts, and of each flag the first examples, of each group of
    fact findings the first ones listed. Nothing else of an outcome is kept, so a dry run
    holds one user's facts at a time, whatever the store holds."""

    def __init__(self, plan: MigrationPlan, waiver: Waiver | None, *, now: datetime,
                 examples: int = 5, listed: int = 50) -> None:  # fmt: skip
        self.plan, self.examples, self.listed = plan, examples, listed
        self.problem: Finding | None = None
        if waiver is not None:
            problem = waiver.problem(plan, now)
            if problem is not None:
                self.problem = Finding(code="waiver.invalid", severity="block", message=problem,
                                       file=waiver.file)  # fmt: skip
                waiver = None
        self.waiver = waiver
        self.counts: Counter[str] = Counter({s: 0 for s in (
            "migrated", "unchanged", "unmappable", "invalid", "dropped", "lossy", "unknown",
            "questions")})  # fmt: skip
        self.facts = 0
        self.lossy_unlisted = False
        """Lossy outcomes were counted apart (``lossy``) but not added: they warn."""
        self._shown: dict[str, list[tuple[Place, dict[str, Any]]]] = {}
        self._found: dict[Group, list[tuple[Place, Finding]]] = {}
        self._total = 0

    def add(self, place: Place, o: FactOutcome) -> None:
        self.counts[o.status] += 1
        flags = [o.status] + ["lossy"] * o.lossy + ["unknown"] * any(v.unknown for v in o.outputs)
        flags += ["questions"] * bool(o.questions)
        self.counts["lossy"] += o.lossy
        self.counts["unknown"] += "unknown" in flags
        self.counts["questions"] += bool(o.questions)
        for flag in flags:
            self._show(flag, place, o)
        self.facts += len(o.facts)  # a merged group holds several
        self._find(place, o)

    def add_lossy(self, place: Place, o: FactOutcome) -> None:
        """``o``, added before while its loss was not known, is lossy."""
        self.counts["lossy"] += 1
        self._show("lossy", place, o)
        self._find(place, replace(o, lossy=True))

    def _show(self, flag: str, place: Place, o: FactOutcome) -> None:
        shown = self._shown.setdefault(flag, [])
        if len(shown) < self.examples or place < shown[-1][0]:
            insort(shown, (place, o.example()), key=lambda e: e[0])
            del shown[self.examples :]

    def _find(self, place: Place, o: FactOutcome) -> None:
        for f in _fact_findings(o):
            if self.waiver is not None:
                f = _waive(f, self.waiver)
            self._total += 1
            found = self._found.setdefault((SEVERITY_ORDER[f.severity], f.waived, f.code), [])
            if len(found) < self.listed or place < found[-1][0]:
                insort(found, (place, f), key=lambda e: e[0])
                del found[self.listed :]

    def report(self, changes: Sequence[KeyChange], other: Sequence[Finding]) -> DryRunReport:
        """The report of what was added, with ``other`` findings (policy, rules, decisions)."""
        plan, waiver = self.plan, self.waiver
        findings = [*other, *([self.problem] if self.problem is not None else [])]
        if waiver is not None:
            findings = [_waive(f, waiver) for f in findings]
        listed = [f for _, found in sorted(self._found.items()) for _, f in found]
        lossy = [Finding(code="fact.lossy", severity="warn", message="")] * self.lossy_unlisted
        verdict = verdict_of((*findings, *listed, *lossy))
        order = SEVERITY_ORDER
        ranked = sorted(findings, key=lambda f: (order[f.severity], f.file or "", f.line or 0,
                                                 f.code))  # fmt: skip
        firsts = sorted((shown[0][0], _RANK.get(flag, 0), flag)
                        for flag, shown in self._shown.items())  # fmt: skip
        return DryRunReport(
            migration=plan.name, plan_file=plan.file, plan_digest=plan.digest, domain=plan.domain,
            source=f"{plan.group}@{plan.from_version}",
            target=f"{plan.to_group}@{plan.to_version}", verdict=verdict,
            counts={**self.counts, "facts": self.facts},
            examples={flag: [e for _, e in self._shown[flag]] for _, _, flag in firsts},
            key_changes=tuple(changes), findings=(*ranked, *listed[: self.listed]),
            unlisted=max(0, self._total - self.listed),
            waiver=waiver.summary() if waiver is not None else None,
        )  # fmt: skip


def _fact_findings(o: FactOutcome) -> list[Finding]:
    key, subject = o.facts[0].key, ",".join(f.id for f in o.facts)
    where = f"user {o.user_id}, fact {subject} ({key} = {o.old[key]!r})"
    if o.status == "unmappable":
        return [Finding(code="fact.unmappable", severity="block", key=key, subject=subject,
                        message=f"{where}: {o.reason}")]  # fmt: skip
    if o.status == "invalid":
        return [
            Finding(
                code="fact.invalid",
                severity="block",
                key=key,
                subject=subject,
                message=f"{where}: invalid under the new version: {'; '.join(o.problems)}",
            )
        ]
    if o.status == "dropped":
        return [Finding(code="fact.dropped", severity="warn", key=key, subject=subject,
                        message=f"{where}: dropped: {o.reason}")]  # fmt: skip
    if o.lossy:
        return [Finding(code="fact.lossy", severity="warn", key=key, subject=subject,
                        message=f"{where}: another stored value migrates to the same new value, "
                        "so the old value cannot be told back")]  # fmt: skip
    return []


def _waive(finding: Finding, waiver: Waiver) -> Finding:
    if finding.severity == "info" or not waiver.covers(finding.code, finding.key, finding.subject):
        return finding
    return finding.model_copy(update={"waived": True})


def render_text(report: DryRunReport) -> str:
    """A readable summary: verdict, counts, findings, examples."""
    lines = [
        f"{report.verdict}: migration {report.migration} ({report.source} → {report.target}, "
        f"{report.domain}) plan {report.plan_file} sha256 {report.plan_digest}"
    ]
    lines.append("facts: " + ", ".join(f"{k} {v}" for k, v in report.counts.items()))
    for change in report.key_changes:
        into = f" → {', '.join(change.new_keys)}" if change.new_keys else ""
        lines.append(f"key {change.key}: {change.change}{into}"
                     + (f" ({change.detail})" if change.detail else ""))  # fmt: skip
    for f in report.findings:
        where = f" {f.file}:{f.line}" if f.file and f.line else f" {f.file}" if f.file else ""
        waived = " (waived)" if f.waived else ""
        lines.append(f"[{f.severity}]{waived} {f.code}{where}: {f.message}")
    if report.unlisted:
        lines.append(f"... and {report.unlisted} more fact findings (see counts)")
    if report.waiver:
        lines.append(f"waiver {report.waiver['file']} signed off by "
                     f"{report.waiver['signed_off_by']}: {report.waiver['reason']}")  # fmt: skip
    return "\n".join(lines)
