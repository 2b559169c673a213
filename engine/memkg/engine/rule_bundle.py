"""A rule bundle as the engine uses it: linted against the engine's schemas, then compiled;
and the ``RuleBook``: the bundle in force, and the recorded ones replays ask for.

A bundle with any lint error is refused (``RulesRefused``, naming every finding).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from memkg.arbitration import QuestionBook, RoleDefaults, load_policy
from memkg.arbitration.policy import PolicyFileError
from memkg.decisions.log import DecisionLog
from memkg.engine.projections import Projections
from memkg.errors import ConfigError, MemkgError
from memkg.model.decision import RECORDER, Revisions
from memkg.model.source import Sources
from memkg.ontology import Ontology
from memkg.roots import Roots
from memkg.rules.evaluator import Evaluator
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import RuleFolders, load_bundle, read_sources, rule_domains
from memkg.rules.spec import Finding, RuleBundle, RuleTable
from memkg.validate.registry import SchemaRegistry
from memkg.yamlfile import YamlError

log = logging.getLogger(__name__)


class Schemas(Protocol):
    """What lint checks a bundle against (an ``Engine`` or its ``Setup``)."""

    @property
    def layers(self) -> Roots: ...

    @property
    def registry(self) -> SchemaRegistry: ...

    @property
    def sources(self) -> Sources: ...


class BundleSetup(Schemas, Protocol):
    @property
    def ontology(self) -> Ontology: ...


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
    findings += lint_bundle(
        bundle,
        lambda d, k: s.schema if (s := engine.registry.spec(d, k)) else None,
        engine.sources,
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


def compile_rules(sources: dict[str, str], engine: Schemas) -> Rules:
    """Load, lint and compile; a bundle with any lint error is refused."""
    bundle, findings = lint_sources(sources, engine)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise RulesRefused(
            f"the rule bundle has {len(errors)} problem(s); first: {errors[0]}", errors
        )
    log.info("rule bundle compiled", extra={"digest": bundle.digest[:12],
                                            "tables": len(bundle.tables)})  # fmt: skip
    return Rules(bundle, Evaluator(bundle), bundle.digest)


class RuleBook:
    """The bundle decisions use (loaded from the roots on first use, replaced whole by
    ``swap``), and the recorded bundles replays ask for by digest."""

    def __init__(self, setup: BundleSetup, log: DecisionLog, projections: Projections) -> None:
        self.setup = setup
        self.log = log
        self.projections = projections
        self._lock = threading.Lock()
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
        return compile_rules(read_sources(path or self.setup.layers.rule_dirs()), self.setup)

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
                return None
        return self._replay_rules[digest]
