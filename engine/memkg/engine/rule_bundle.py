"""A rule bundle as the engine uses it: linted against the engine's schemas, then compiled.

A bundle with any lint error is refused (``RulesRefused``, naming every finding).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memkg.errors import ConfigError
from memkg.rules.evaluator import Evaluator
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle
from memkg.rules.spec import Finding, RuleBundle, RuleTable

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memkg.engine.decisions import DecisionLayer as Engine


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


def lint_sources(sources: dict[str, str], engine: Engine) -> tuple[RuleBundle, list[Finding]]:
    """Everything the loader and lint find wrong with a bundle, against the engine's schemas."""
    bundle, findings = load_bundle(sources, root=engine.layers)
    findings += lint_bundle(
        bundle,
        lambda d, k: s.schema if (s := engine.registry.spec(d, k)) else None,
        engine.sources,
    )
    return bundle, sorted(findings, key=lambda f: (f.file, f.line, f.code))


def compile_rules(sources: dict[str, str], engine: Engine) -> Rules:
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
