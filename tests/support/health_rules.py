"""An engine on the example health domain with a rule file of a test's own (table ``t``)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from memkg import Engine, EngineConfig, FrozenClock
from memkg.roots import builtin

CONSENT = {"consent_granted": True, "consent_version": "v1", "purpose": "care"}


def health_engine(root: Path, rules: str) -> tuple[Engine, FrozenClock]:
    """An in-memory engine whose roots (under ``root``) hold the example schemas, ontology and
    health domain, and ``rules`` as the table ``t``; its clock is frozen."""
    for name in ("schemas", "ontology"):
        shutil.copytree(builtin("examples") / name, root / name)
    health = root / "rules" / "health"
    health.mkdir(parents=True)
    domain = (builtin("examples") / "rules" / "health" / "domain.yaml").read_text()
    # ``t`` is the only table: the default decision names it (lint refuses one naming none)
    domain = domain.replace("default_decision: triage", "default_decision: t")
    (health / "domain.yaml").write_text(domain)
    (health / "t.yaml").write_text(rules)
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    return Engine(clock=clock, config=EngineConfig(roots=(root,), shacl=False)), clock
