"""A rule bundle as the engine uses it: linted against the engine's schemas, then compiled;
and the ``RuleBook``: the bundle in force, and the recorded ones replays ask for.

A bundle with any lint error is refused (``RulesRefused``, naming every finding), as is one
whose folders hold what ``rules lint`` refuses beside the tables (``folder_findings``) or a
table durable-rules will not register (``rules.compile``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from memkg.arbitration import QuestionBook, RoleDefaults, load_policy
from memkg.arbitration.policy import PolicyFileError
from memkg.config import EngineConfig
from memkg.decisions.log import DecisionLog
from memkg.engine.projections import Projections
from memkg.errors import ConfigError, MemkgError
from memkg.evolution.migration import MigrationError
from memkg.model.decision import RECORDER, Revisions
from memkg.model.source import Sources
from memkg.ontology import Ontology
from memkg.roots import Roots
from memkg.rules.compiler import ruleset_name
from memkg.rules.evaluator import Evaluator
from memkg.rules.lint import lint_bundle, question_findings
from memkg.rules.loader import (
    RuleFolders,
    folder_sources,
    load_bundle,
    read_sources,
    rule_domains,
)
from memkg.rules.spec import Finding, RuleBundle, RuleTable
from memkg.validate.registry import SchemaRegistry
from memkg.validate.shape_lint import Flaw, broken_shapes, locate
from memkg.validate.shape_targets import idle_shapes
from memkg.yamlfile import YamlError

log = logging.getLogger(__name__)


class Schemas(Protocol):
    """What lint checks a bundle against (an ``Engine`` or its ``Setup``)."""

    @property
    def config(self) -> EngineConfig: ...

    @property
    def layers(self) -> Roots: ...

    @property
    def registry(self) -> SchemaRegistry: ...

    @property
    def sources(self) -> Sources: ...


class BundleSetup(Schemas, Protocol):
    @property
    def ontology(self) -> Ontology: ...

    @property
    def plan_problems(self) -> tuple[MigrationError, ...]: ...


class RulesRefused(ConfigError):
    """A rule bundle failed lint or its cases; the bundle in use stays."""

    code = "rules.refused"

    def __init__(self, message: str, findings: list[Finding], failures: list[str] | None = None):
        super().__init__(message)
        self.findings = findings
        self.failures = failures or []

    def to_dict(self) -> dict[str, object]:
        return {
            "error": self.code,
            "message": self.message,
            "findings": [f.to_dict() for f in self.findings],
            "failures": self.failures,
        }


@dataclass(frozen=True)
class Rules:
    """A linted, compiled bundle and the keys each table reads."""

    bundle: RuleBundle
    evaluator: Evaluator
    digest: str

    def keys(self, table: RuleTable, entity_keys: frozenset[str]) -> frozenset[str]:
        return self.evaluator.plan(table).keys | entity_keys


def lint_sources(sources: dict[str, str], engine: Schemas) -> tuple[RuleBundle, list[Finding]]:
    """Everything the loader and lint find wrong with a bundle, against the engine's schemas."""
    bundle, findings = load_bundle(sources, root=engine.layers)
    registry = engine.registry
    findings += lint_bundle(
        bundle,
        lambda d, k: s.schema if (s := registry.spec(d, k)) else None,
        engine.sources,
        lambda d, k: bool((s := registry.spec(d, k)) and s.entity),
    )
    return bundle, sorted(findings, key=lambda f: (f.file, f.line, f.code))


def arbitration_findings(
    folders: RuleFolders, engine: Schemas, policy: Path | None = None
) -> list[Finding]:
    """The arbitration files beside the rules, loaded as the engine loads them: each domain's
    ``questions.yaml`` and ``defaults.yaml``, and ``policy`` if given. The first problem of
    each kind is a finding with its file and line (lint would pass a folder the engine refuses).
    """
    domains = rule_domains(folders)
    checks: list[Callable[[], object]] = [
        lambda: QuestionBook.load(domains),
        lambda: RoleDefaults.load(domains, engine.registry.spec),
    ]
    if policy is not None:
        checks.append(lambda: load_policy(policy))
    findings = []
    for check in checks:
        try:
            check()
        except (YamlError, PolicyFileError) as exc:
            findings.append(Finding(exc.code, exc.message, exc.file or "", exc.line))
    return findings


def ontology_findings(ontology: Ontology) -> list[Finding]:
    """A finding (``ontology.parse``, ``ontology.text_too_long``) for each Turtle file in force
    that does not load, at the line the parser names (else 1); once all load, one for each fact
    shape pySHACL could not run (``shape_lint.broken_shapes``: ``shacl.sparql``,
    ``shacl.federated``, ``shacl.shape``). Either refuses every write in every domain.

    The graphs the engine uses are tried first (each parsed once per engine), every file only
    when one does not load, to name each broken file."""
    try:
        for graph in ("core", "knowledge", "fact_shapes", "knowledge_shapes"):
            getattr(ontology, graph)
    except ConfigError:
        pass
    else:
        return _shape_findings(broken_shapes(ontology.fact_shapes), ontology)
    found = []
    for name, exc in ontology.file_problems():
        line = re.search(r"\bline (\d+)", exc.message)
        found.append(Finding(exc.code, exc.message, name, int(line[1]) if line else 1))
    return found


def idle_shape_findings(setup: BundleSetup) -> list[Finding]:
    """A finding for each fact shape that never applies or refuses every value, against the
    keys and classes in force (``shape_targets.idle_shapes``); none while a Turtle file in force
    does not load (``ontology_findings`` names it)."""
    registry, ontology = setup.registry, setup.ontology
    try:
        shapes, classes = ontology.fact_shapes, ontology.classes
    except ConfigError:
        return []
    specs = [spec for domain in registry.domains() for key in registry.keys(domain)
             if (spec := registry.spec(domain, key)) is not None]  # fmt: skip
    return _shape_findings(idle_shapes(shapes, specs, classes), ontology)


def _shape_findings(flaws: list[Flaw], ontology: Ontology) -> list[Finding]:
    located = locate(flaws, ontology.fact_shape_files) if flaws else []
    return [Finding(at.flaw.code, at.flaw.message, at.file, at.line,
                    severity=at.flaw.severity) for at in located]  # fmt: skip


def beside_in_force(sources: Mapping[str, str], in_force: Mapping[str, str]) -> dict[str, str]:
    """A rules folder's files (``domain/name.yaml`` → text) with the files in force of every
    domain the folder does not declare: a folder holds new rules for its own domains, and the
    others keep the rules in force, not what their files on disk say now."""
    mine = {rel.split("/", 1)[0] for rel in sources}
    kept = {rel: text for rel, text in in_force.items()
            if rel.split("/", 1)[0] not in mine}  # fmt: skip
    return {**kept, **sources}


def folder_findings(
    folders: RuleFolders, setup: BundleSetup, policy: Path | None = None
) -> list[Finding]:
    """What is wrong beside the rule tables of ``folders``: the arbitration files
    (``arbitration_findings``), questions about keys no schema declares
    (``lint.question_findings``), Turtle files in force that do not load and shapes that
    cannot run (``ontology_findings``), shapes that never apply (``idle_shape_findings``).
    ``rules lint`` reports them; loading the bundle refuses the errors among them."""
    registry = setup.registry
    return [
        *arbitration_findings(folders, setup, policy),
        *ontology_findings(setup.ontology),
        *idle_shape_findings(setup),
        *question_findings(
            rule_domains(folders),
            lambda d, k: None if registry.spec(d, k) else registry.unknown_key(d, k),
        ),
        *plan_findings(setup),
    ]


def plan_findings(setup: BundleSetup) -> list[Finding]:
    """Migration plans under the roots that do not load, as warnings: no read upcasts by
    them and running one is refused, but the rules do not read them."""
    found = []
    for exc in setup.plan_problems:
        said = exc.message.removeprefix(f"{exc.file}:{exc.line}: ")
        message = f"{said} (until it loads, no read upcasts by this plan)"
        found.append(Finding(exc.code, message, exc.file, exc.line, severity="warning"))
    return found


def compile_rules(
    sources: dict[str, str], engine: Schemas, beside: Sequence[Finding] = ()
) -> Rules:
    """Load, lint and compile; a bundle with any lint error, any error ``beside`` it (the
    ``folder_findings`` of the folders it was read from), or a table the rule engine refuses
    to register (``rules.compile``), is refused."""
    bundle, findings = lint_sources(sources, engine)
    findings = sorted([*findings, *beside], key=lambda f: (f.file, f.line, f.code))
    errors = [f for f in findings if f.severity == "error"]
    if not errors:  # lint passed: tables past the limits it knows never reach durable-rules
        evaluator = Evaluator(bundle)
        errors = compile_findings(bundle, evaluator)
        if not errors and engine.config.rule_runner == "python":  # compiled by both
            from memkg.rules.python_runner import PythonRuleRunner

            evaluator.runner = PythonRuleRunner.for_tables(list(bundle.tables.values()))
    if errors:
        raise RulesRefused(
            f"the rule bundle has {len(errors)} problem(s); first: {errors[0]}", errors
        )
    for warning in findings:  # what loads but costs: the operator's log says it once
        if warning.severity == "warning":
            log.warning("rule bundle: %s", warning, extra={"code": warning.code})
    log.info("rule bundle compiled", extra={"digest": bundle.digest[:12],
                                            "tables": len(bundle.tables)})  # fmt: skip
    return Rules(bundle, evaluator, bundle.digest)


def compile_findings(bundle: RuleBundle, evaluator: Evaluator) -> list[Finding]:
    """``rules.compile`` for each table the runner could not register (``DurableRunner.refused``)
    although lint passed it: going live, it would fail every decision it is asked for."""
    refused: dict[str, str] = getattr(evaluator.runner, "refused", {})
    return [
        Finding(
            "rules.compile",
            f"durable-rules refused table {table.qualified}, for a reason lint does not check "
            f"(simplify its rules, or split it to find the one refused): {why}",
            table.file,
            table.policy_line,
        )
        for table in sorted(bundle.tables.values(), key=lambda t: t.file)
        if (why := refused.get(ruleset_name(table))) is not None
    ]


class RuleBook:
    """The bundle decisions use (loaded from the roots on first use, replaced whole by
    ``swap``), and the recorded bundles replays ask for by digest."""

    def __init__(self, setup: BundleSetup, log: DecisionLog, projections: Projections) -> None:
        self.setup = setup
        self.log = log
        self.projections = projections
        self._lock = threading.Lock()
        self.reloading = threading.Lock()
        """Held by a reload from its read of the rules in force to its swap: two at once would
        each build on what the other replaces, and the last swap would drop the first's."""
        self._rules: Rules | None = None
        self._replay_rules: dict[str, Rules] = {}

    @property
    def rules(self) -> Rules:
        if self._rules is None:
            with self._lock:
                if self._rules is None:
                    self._rules = self.load()
                    self.log.save_bundle(self._rules.digest, self._rules.bundle.sources)
        return self._rules

    def load(self, path: RuleFolders | None = None) -> Rules:
        """The bundle of ``path`` (default: the roots' rule folders) and the files beside it,
        refused on what ``rules lint`` finds there.

        A ``rules/`` folder given as ``path`` holds new rules for the domains it declares; every
        other domain keeps the rules in force (``beside_in_force``). A folder holding no rule
        files (a root, one domain's folder) is refused (``loader.folder_sources``)."""
        folders = path or self.setup.layers.rule_dirs()
        given = folder_sources(path) if isinstance(path, Path) else None
        policy = folders / "policy.yaml" if isinstance(folders, Path) else None
        beside = folder_findings(folders, self.setup, policy)
        sources = read_sources(folders) if given is None else given
        if isinstance(path, Path):
            sources = beside_in_force(sources, self.in_force_sources())
        return compile_rules(sources, self.setup, beside)

    def in_force_sources(self) -> Mapping[str, str]:
        """The rule files in force (``domain/name.yaml`` → text); before any bundle was
        loaded, the roots' files as they are now (not compiled: a broken one a folder replaces
        is not in the way)."""
        with self._lock:
            rules = self._rules
        if rules is not None:
            return rules.bundle.sources
        return read_sources(self.setup.layers.rule_dirs())

    def swap(self, rules: Rules) -> None:
        self.log.save_bundle(rules.digest, rules.bundle.sources)
        with self._lock:
            self._rules = rules

    def revisions(self, rules: Rules) -> Revisions:
        """Kept per bundle: the schemas and the ontology are loaded once per engine."""
        return self.projections.revisions(
            rules.digest,
            lambda: Revisions(
                rule_bundle=rules.digest,
                schema_versions=self.setup.registry.versions(),
                ontology=self.setup.ontology.digest,
                recorder=RECORDER,
            ),
        )

    def recorded(self, digest: str) -> Rules | None:
        """The bundle a logged decision was made with, or None when it is gone or no longer
        compiles."""
        if digest == self.rules.digest:
            return self.rules
        if digest not in self._replay_rules:
            sources = self.log.bundle(digest)
            if sources is None:
                return None
            try:
                self._replay_rules[digest] = compile_rules(sources, self.setup)
            except MemkgError:
                # linted when it was in use: today's schemas may no longer declare what it
                # reads (a key a migration renamed), which does not change what it did
                found = unlinted(sources)
                if found is None:
                    return None
                self._replay_rules[digest] = found
        return self._replay_rules[digest]


def unlinted(sources: dict[str, str]) -> Rules | None:
    """A recorded bundle compiled without lint (None when it no longer loads or compiles).

    A recorded bundle was linted when it was in use, and a new one is judged against the
    schemas it will run with: lint against today's schemas would hold either to keys that were
    renamed or dropped since.
    """
    bundle, problems = load_bundle(sources)
    if any(f.severity == "error" for f in problems):
        return None
    try:
        return Rules(bundle, Evaluator(bundle), bundle.digest)
    except MemkgError:
        return None
