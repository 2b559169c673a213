"""Schema migrations, wired for ``Engine``: stored facts, rules and decisions meet a plan.

The plan, its transform, verdict, events and upcasters live in ``memkg.evolution``; this
module gathers what they judge: every user's live facts, the keys each rule and rule case
reads (linted against the old and the new key schemas, so a break names file and line), and
recent logged decisions re-made with migrated facts and the new rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from memkg.clock import FrozenClock
from memkg.engine.projections import Projections
from memkg.engine.replay import graph_as_of
from memkg.engine.rule_bundle import unlinted
from memkg.errors import ConcurrencyConflict, MemkgError, NotFound
from memkg.evolution.apply import AsWritten, events_for, idempotency_key
from memkg.evolution.dry_run import (
    DryRunReport,
    Finding,
    KeyChange,
    Tally,
    key_changes,
    policy_findings,
)
from memkg.evolution.migration import MigrationPlan, load_plan
from memkg.evolution.outcome import (
    FactOutcome,
    KeyPolicy,
    Losses,
    migrate,
    ordered,
    plan_problems,
)
from memkg.evolution.waiver import Waiver, load_waiver
from memkg.model.decision import Decision, Result
from memkg.model.event import Event, NewEvent
from memkg.model.fact import LIVE_STATUSES, Fact
from memkg.model.keyspec import KeySpec
from memkg.roots import Roots
from memkg.rules.cases import load_cases
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import RuleFolders, SchemaRoot, load_bundle, read_sources
from memkg.rules.spec import Finding as RuleFinding
from memkg.rules.spec import RuleBundle
from memkg.validate.guards import HASHED, hash_pii
from memkg.validate.validator import Validator

if TYPE_CHECKING:
    from memkg.engine.evolution import Evolution
    from memkg.engine.rule_bundle import Rules

LIVE = LIVE_STATUSES
Specs = dict[str, KeySpec]


class MigrationRefused(MemkgError):
    """The dry run BLOCKed, so nothing was applied; ``report`` says why."""

    code = "migration.blocked"

    def __init__(self, report: DryRunReport) -> None:
        blocking = [f for f in report.findings if f.severity == "block" and not f.waived]
        first = f"; first: {blocking[0].message}" if blocking else ""
        super().__init__(f"the dry run of {report.migration} BLOCKs ({len(blocking)} finding(s)"
                         f"{first}); nothing was written")  # fmt: skip
        self.report = report

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "report": self.report.model_dump(mode="json")}


class ApplyReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    migration: str
    verdict: str
    users: int
    migrated: int
    """Facts (or merged groups) written in this run."""
    resumed: int
    """Already written by an earlier, interrupted run: skipped."""
    left: int
    """Unmappable or invalid facts a waiver let through: left as stored."""
    events: int
    questions: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class StoredPii:
    """``x-pii: hash`` as ingest stores it (``validate.guards``), salted per user by ``salt``;
    what else a write refuses, by ``validator`` (none: nothing more)."""

    salt: Callable[[str], bytes]
    validator: Validator | None = None

    def hash(self, user_id: str, value: Any, paths: tuple[tuple[str, ...], ...]) -> Any:
        return hash_pii(value, paths, self.salt(user_id))

    def is_hash(self, text: str) -> bool:
        return HASHED.fullmatch(text) is not None

    def refused(self, spec: KeyPolicy, fact: Fact, value: Any) -> list[str]:
        if self.validator is None or not isinstance(spec, KeySpec):  # a registry's spec
            return []
        return [
            f"{p.message} ({p.code})" for p in self.validator.stored_problems(spec, fact, value)
        ]


def _dry_pii(evo: Evolution) -> StoredPii:
    """What a dry run hashes with: the shape an apply would store, without reading (or, for a
    user who has none yet, creating) the user's salt; a dry run writes nothing. A decision
    re-made in the dry run sees these hashes."""
    return StoredPii(lambda _: b"memkg-dry-run", evo.setup.validator)


def plan_file(layers: Roots, plan: str | Path) -> tuple[Path, Path | None]:
    """The file of ``plan`` (a path, or a plan's name: ``Roots.plan``) and the root it lies
    in; ``migration.not_found`` when it is neither."""
    path = Path(plan)
    if not path.is_file():
        named = layers.plan(str(plan))
        if named is None:
            raise NotFound(
                f"no migration plan {str(plan)!r:.120}: give a plan file, or a plan's name "
                "DOMAIN/NAME for schemas/DOMAIN/migrations/NAME.yaml in a root "
                "(`memkg schema history DOMAIN` lists them)", code="migration.not_found",
            )  # fmt: skip
        path = named
    return path, layers.root_of(path)


def plan_and_specs(
    evo: Evolution, plan: MigrationPlan | str | Path
) -> tuple[MigrationPlan, Specs, Specs]:
    """The plan with the old and new key specs of its groups; checks the plan's keys."""
    if not isinstance(plan, MigrationPlan):
        plan = load_plan(*plan_file(evo.setup.layers, plan))
    registry = evo.setup.registry
    old = registry.group(plan.domain, plan.group, plan.from_version)
    new = registry.group(plan.domain, plan.to_group, plan.to_version)
    for label, specs, group, version in (("from", old, plan.group, plan.from_version),
                                         ("to", new, plan.to_group, plan.to_version)):  # fmt: skip
        if not specs:
            raise MemkgError(
                f"{plan.file}: `{label}` names schemas/{plan.domain}/{group}@{version}"
                ".json, which does not exist",
                code="migration.unknown_group",
            )
    plan_problems(plan, old, new)
    return plan, old, new


def as_written(evo: Evolution) -> AsWritten:
    """How the engine's writes take a new fact (a migrated fact of a new kind is taken so)."""
    return AsWritten(evo.setup.config.state_valid_for, evo.setup.sources.confirmed)


def live_facts(evo: Evolution, user_id: str) -> list[Fact]:
    memory = evo.projections.memory(user_id)
    with evo.journal.lock:  # a resident memory's facts are kept as a write folds events
        return [f for f in memory.facts.values() if f.status in LIVE]


def dry_run(
    evo: Evolution,
    plan: MigrationPlan | str | Path,
    *,
    rules: str | Path | None = None,
    waiver: Waiver | str | Path | None = None,
    decisions: int = 20,
    progress: Callable[[int], None] | None = None,
) -> DryRunReport:
    """``progress`` is called with the number of users read so far."""
    plan, old, new = plan_and_specs(evo, plan)
    tally, changes, others = _judged(evo, plan, old, new, rules, waiver, decisions, progress)
    return tally.report(changes, others)


def _judged(evo: Evolution, plan: MigrationPlan, old: Specs, new: Specs,
            rules: str | Path | None, waiver: Waiver | str | Path | None, decisions: int,
            progress: Callable[[int], None] | None, *, complete: bool = True,
            ) -> tuple[Tally, list[KeyChange], list[Finding]]:  # fmt: skip
    """The plan's outcomes over every user's facts, tallied one user at a time, and the
    key changes and findings of the policy, the rules and the decisions.

    Whether an outcome is lossy depends on every other user's: when some are, the users are
    read a second time for those outcomes' examples and findings, unless ``complete`` is
    False and the verdict is not BLOCK (an apply needs only the verdict then)."""
    if waiver is not None and not isinstance(waiver, Waiver):
        waiver = load_waiver(waiver)
    tally, losses = Tally(plan, waiver, now=evo.clock.now()), Losses()
    users, pii = evo.store.users_in(plan.domain), _dry_pii(evo)  # the others hold none
    for done, user in enumerate(users, 1):
        for place, outcome in ordered(plan, live_facts(evo, user), old, new, pii,
                                      batch=done):  # fmt: skip
            losses.note(outcome)
            tally.add(place, outcome)
        if progress is not None:
            progress(done)
    changes = key_changes(plan, old, new)
    folder: RuleFolders = Path(rules) if rules is not None else evo.setup.layers.rule_dirs()
    found = [
        *policy_findings(plan, old, new),
        *rule_findings(evo, plan, old, new, changes, folder),
    ]
    found += decision_findings(evo, plan, old, new, folder, decisions)
    if losses.found():
        tally.lossy_unlisted = True
        if complete or tally.report(changes, found).verdict == "BLOCK":
            tally.lossy_unlisted = False
            # the last users read first: those the projections still hold are not folded again
            for n in range(len(users), 0, -1):
                for place, outcome in ordered(plan, live_facts(evo, users[n - 1]), old, new,
                                              pii, batch=n):  # fmt: skip
                    if losses.lossy(outcome):
                        tally.add_lossy(place, outcome)
    return tally, changes, found


def apply(evo: Evolution, plan: MigrationPlan | str | Path, *, rules: str | Path | None = None,
          waiver: Waiver | str | Path | None = None,
          progress: Callable[[int], None] | None = None) -> ApplyReport:  # fmt: skip
    """Dry-run, refuse on BLOCK, then write each fact's events once (resumable)."""
    plan, old, new = plan_and_specs(evo, plan)
    for problem in evo.setup.plan_problems:  # another plan file upcasts the same step
        if problem.code == "migration.conflict" and problem.file == plan.file:
            raise problem
    tally, changes, others = _judged(evo, plan, old, new, rules, waiver, 0, None,
                                     complete=False)  # fmt: skip
    report = tally.report(changes, others)
    if report.verdict == "BLOCK":
        raise MigrationRefused(report)
    counts = {"migrated": 0, "resumed": 0, "left": 0, "events": 0}
    questions: list[dict[str, str]] = []
    users = evo.store.users_in(plan.domain)
    for done, user in enumerate(users):
        if progress is not None:
            progress(done)
        for outcome, written in _migrate_user(evo, plan, old, new, user):
            if written is False:
                counts["left"] += 1
                continue
            questions += [{"user_id": user, "fact_id": outcome.facts[0].id, "key": key,
                           "question": q} for key, q in outcome.questions]  # fmt: skip
            if written is None:
                counts["resumed"] += 1
            elif written:
                counts["migrated"] += 1
                counts["events"] += written
    evo.setup.upcasters.register(plan, old, new)
    return ApplyReport(migration=plan.name, verdict=report.verdict, users=len(users),
                       questions=tuple(questions), **counts)  # fmt: skip


_ATTEMPTS = 5
"""How often one user's facts are read and migrated again when another writer changed the
user between the read and the write."""


def _migrate_user(
    evo: Evolution, plan: MigrationPlan, old: Specs, new: Specs, user: str
) -> list[tuple[FactOutcome, int | bool | None]]:
    """Each outcome of the user's facts and what writing it did: events appended, None when
    an earlier run wrote them, False when it is left as it was (unmappable, invalid).

    The facts are read at a stream version and each write expects the version the one before
    it left: a write from another process in between (a restatement, a retraction, an
    erasure) fails the append, and the user is read and migrated again from what they hold
    now; what this run already wrote is found again by its idempotency key."""
    mine: dict[str, int] = {}  # the idempotency keys this run wrote, with their events
    pii = StoredPii(evo.store.subject_salt, evo.setup.validator)
    for attempt in range(1, _ATTEMPTS + 1):
        version = evo.store.stream_version(user)
        done: list[tuple[FactOutcome, int | bool | None]] = []
        try:
            for outcome in migrate(plan, live_facts(evo, user), old, new, pii):
                if outcome.status in ("unmappable", "invalid"):
                    done.append((outcome, False))
                    continue
                key = idempotency_key(plan, outcome)
                events = events_for(plan, outcome, new, evo.clock, pii, as_written(evo))
                if not events:
                    done.append((outcome, 0))
                    continue
                # a conflict the write creates is queued in the same append (``freeze``)
                appended = evo.journal.append(user, events, expected_version=version,
                                              idempotency_key=key, freeze=True)  # fmt: skip
                if appended.duplicate:
                    done.append((outcome, mine.get(key)))
                    continue
                mine[key] = len(appended.events)
                version = appended.version
                done.append((outcome, len(appended.events)))
        except ConcurrencyConflict:
            if attempt == _ATTEMPTS:
                raise
            continue
        return done
    raise AssertionError("unreachable")  # pragma: no cover


# -- rules and rule cases ----------------------------------------------------------------------


def rule_findings(evo: Evolution, plan: MigrationPlan, old: Specs, new: Specs,
                  changes: list[KeyChange], folder: RuleFolders) -> list[Finding]:  # fmt: skip
    """Rules and cases that break under the new schemas (block) or read a changed key (warn)."""
    bundle, _ = load_bundle(read_sources(folder), root=evo.setup.layers)
    mine = set(old) | set(new)

    def lookup(specs: Specs) -> Any:
        def schema(domain: str, key: str) -> dict[str, Any] | None:
            if domain == plan.domain and key in mine:
                return specs[key].schema if key in specs else None
            spec = evo.setup.registry.spec(domain, key)
            return spec.schema if spec is not None else None

        return schema

    def ident(f: RuleFinding) -> tuple[Any, ...]:
        return (f.code, f.file, f.line, f.rule_id)

    before = {ident(f) for f in lint_bundle(bundle, lookup(old))}
    broken = [f for f in lint_bundle(bundle, lookup(new))
              if f.severity == "error" and ident(f) not in before]  # fmt: skip
    changed = {c.key: c for c in changes if c.change != "added"}
    found = []
    for f in broken:
        key = _key_at(bundle, f)
        hint = _hint(changed.get(key or ""))
        found.append(Finding(code="rule.breaks", severity="block", key=key, subject=f.rule_id,
                             message=f"rule {f.rule_id} breaks: {f.code}: {f.message}{hint}",
                             file=f.file, line=f.line))  # fmt: skip
    flagged = {(f.file, f.rule_id) for f in broken}
    rules = [r for (domain, _), t in sorted(bundle.tables.items()) if domain == plan.domain
             for r in t.rules if (r.file, r.id) not in flagged]  # fmt: skip
    for rule in rules:
        for cond in rule.conditions:
            change = changed.get(cond.key or "")
            if change is None:
                continue
            found.append(Finding(code="rule.reads_changed_key", severity="warn", key=cond.key,
                                 subject=rule.id, file=rule.file, line=cond.line,
                                 message=f"rule {rule.id} reads {cond.key}, which the migration "
                                 f"{change.change}{_hint(change)}: check it still means what it "
                                 "says"))  # fmt: skip
    return found + case_findings(plan, bundle, folder, new, changed, evo.setup.layers)


def case_findings(plan: MigrationPlan, bundle: RuleBundle, folder: RuleFolders, new: Specs,
                  changed: Mapping[str, KeyChange],
                  root: SchemaRoot = None) -> list[Finding]:  # fmt: skip
    cases, _ = load_cases(folder, bundle, root)
    found = []
    for case in cases:
        if case.table.domain != plan.domain:
            continue
        for raw in case.facts:
            key = raw.get("key", "")
            change = changed.get(key)
            if change is None:
                continue
            if change.change in ("removed", "renamed"):
                why = f"uses {key}, which the migration {change.change}{_hint(change)}"
            elif key in new and not new[key].validator.is_valid(raw.get("value")):
                why = f"gives {key} the value {raw.get('value')!r}, which the new version refuses"
            else:
                continue
            found.append(Finding(code="case.breaks", severity="block", key=key, subject=case.name,
                                 message=f"rule case {case.name!r} {why}", file=case.file,
                                 line=case.line))  # fmt: skip
    return found


def _key_at(bundle: RuleBundle, finding: RuleFinding) -> str | None:
    for rule in bundle.rules():
        if rule.id != finding.rule_id or rule.file != finding.file:
            continue
        for cond in rule.conditions:
            if cond.line == finding.line or any(t.line == finding.line for t in cond.tests):
                return cond.key
    return None


def _hint(change: KeyChange | None) -> str:
    if change is None:
        return ""
    if change.change == "renamed":
        return f" (now {change.new_keys[0]})"
    if change.change == "removed":
        return f" ({change.detail})"
    return f" ({change.detail})" if change.detail else ""


# -- decisions ---------------------------------------------------------------------------------


def decision_findings(evo: Evolution, plan: MigrationPlan, old: Specs, new: Specs,
                      folder: RuleFolders,
                      limit: int) -> list[Finding]:  # fmt: skip
    """Recent logged decisions of the domain whose outcome the migration would change.

    Each is made twice as of its log position and clock: with the facts and rules it was
    made with, and with the facts migrated and the new rules; only the outcome (status,
    action, parameters, urgency) is compared.
    """
    if limit <= 0:
        return []
    candidate = unlinted(read_sources(folder))
    if candidate is None:
        return [
            Finding(
                code="decision.not_replayed",
                severity="info",
                message="decisions not replayed: the rules in "
                f"{folder if isinstance(folder, Path) else 'force'} do not load",
            )
        ]
    bundles: dict[str, Rules | None] = {}
    found = []
    for user in evo.store.users():
        for decision in evo.decision_log.for_user(user, limit=limit):
            if decision.request.domain != plan.domain:
                continue
            digest = decision.revisions.rule_bundle
            if digest not in bundles:
                sources = evo.decision_log.bundle(digest)
                bundles[digest] = unlinted(sources) if sources is not None else None
            baseline = bundles[digest]
            if baseline is None:
                continue
            before, after = _remake(evo, plan, old, new, decision, baseline, candidate)
            if _outcome(before) != _outcome(after):
                found.append(Finding(
                    code="decision.outcome_changed", severity="warn", subject=decision.decision_id,
                    message=f"decision {decision.decision_id} ({user}, {decision.request.decision})"
                    f" was {_describe(before)}, would be {_describe(after)}"))  # fmt: skip
    return found


def _remake(
    evo: Evolution,
    plan: MigrationPlan,
    old: Specs,
    new: Specs,
    decision: Decision,
    baseline: Rules,
    candidate: Rules,
) -> tuple[Result, Result]:
    """The decision made again as memory stood, and as the plan would have left it then."""
    user, at = decision.request.user_id, decision.as_of_seq
    graph = graph_as_of(evo.setup, evo.projections, user, at)
    before = evo.decider.redecide(baseline, decision, graph)
    stored = evo.store.read_stream(user, up_to_seq=at) if at > 0 else []
    live = [f for f in graph.memory.facts.values() if f.status in LIVE]
    clock = FrozenClock(decision.decided_at)
    pii = _dry_pii(evo)
    added = [e for o in migrate(plan, live, old, new, pii)
             for e in events_for(plan, o, new, clock, pii, as_written(evo))]  # fmt: skip
    scratch = Projections(_Scratch(user, stored, added), evo.setup.new_graph)
    migrated = scratch.graph(user)
    after = evo.decider.redecide(candidate, decision, migrated,
                                 reviews=scratch.reviews(user, migrated),
                                 projections=scratch)  # fmt: skip
    return before.result, after.result


class _Scratch:
    """One user's stream as of a position, with a plan's events after it: what a decision
    would have read had the plan been applied then. Read by its own ``Projections``."""

    def __init__(self, user_id: str, stored: Sequence[Event], added: Sequence[NewEvent]) -> None:
        last = stored[-1] if stored else None
        seq, version = (last.seq, last.version) if last is not None else (0, 0)
        self._events = [*stored, *(Event(**e.model_dump(), seq=seq + i, version=version + i)
                                   for i, e in enumerate(added, 1))]  # fmt: skip
        self._user_id = user_id

    def read_stream(
        self, user_id: str, *, up_to_seq: int | None = None, after_version: int = 0
    ) -> list[Event]:
        if user_id != self._user_id:
            return []
        return [e for e in self._events if (up_to_seq is None or e.seq <= up_to_seq)
                and e.version > after_version]  # fmt: skip

    def stream_mark(self, user_id: str) -> tuple[int, int]:
        last = self._events[-1].version if user_id == self._user_id and self._events else 0
        return last, 0


def _outcome(result: Result) -> tuple[Any, ...]:
    return (result.status, result.action, sorted(result.parameters.items()), result.urgency)


def _describe(result: Result) -> str:
    action = f" {result.action}" if result.action else ""
    return f"{result.status.value}{action}"
