"""The gates answer every input: rule, domain, cases and migration-plan files, mutated at
random from the shipped ones, end in findings (file, line, code) or success, never a crash."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg import Engine, EngineConfig
from memkg.engine.rule_bundle import lint_sources
from memkg.errors import MemkgError
from memkg.evolution.migration import parse_plan
from memkg.evolution.outcome import plan_problems
from memkg.roots import builtin
from memkg.rules.cases import load_cases
from memkg.rules.spec import Finding

EXAMPLES = builtin("examples")
ENGINE = Engine(config=EngineConfig(shacl=False))
WORDS = [
    "rules", "hit_policy", "when", "then", "key", "eq", "in", "minimum", "maximum", "type",
    "pattern", "actions", "context", "description", "default_decision", "priority", "id",
    "action", "all", "any", "not", "field", "contains", "cases", "facts", "expect", "now",
    "value", "steps", "migration", "domain", "from", "to", "map", "values", "enum", "string",
    "integer", "number", "array", "object", "first", "unique", "collect", "gte", "exists",
    "parameters", "urgency", "explain", "allow_no_match", "graph", "status", "source", "items",
    "required", "format", "diet.restrictions", "flight@1", "22:00", "2026-01-01", "numbr",
]  # fmt: skip
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))


def _yaml(rel: str) -> Any:
    return yaml.safe_load((EXAMPLES / rel).read_text(encoding="utf-8"))


BASES = {
    "rule": _yaml("rules/finance/suitability.yaml"),
    "domain": _yaml("rules/finance/domain.yaml"),
    "cases": _yaml("rules/finance/suitability.cases.yaml"),
    "plan": _yaml("schemas/health/migrations/diet_organ_meat.yaml"),
}
DOMAIN = (EXAMPLES / "rules/finance/domain.yaml").read_text(encoding="utf-8")
RULE = (EXAMPLES / "rules/finance/suitability.yaml").read_text(encoding="utf-8")

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
    st.sampled_from(WORDS), st.text(max_size=8),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(WORDS), inner, max_size=3)
    ),
    max_leaves=8,
)
mutations = st.lists(
    st.tuples(st.lists(st.integers(0, 30), max_size=6), st.booleans(), values),
    min_size=1,
    max_size=4,
)
damage = st.one_of(
    st.none(),
    st.tuples(
        st.integers(0, 10_000),
        st.sampled_from(["\x00", "\x07", "\ufffe", "\t", ": ", "{", "&a ", "*a", "\n- ",
                         "!!python/name:os.system "]),
    ),
)  # fmt: skip


def mutate(doc: Any, changes: list[tuple[list[int], bool, Any]]) -> Any:
    """``doc`` with each change applied: walk by indexes, then replace (or add) a value."""
    doc = copy.deepcopy(doc)
    for path, add, value in changes:
        node = doc
        for index in path:
            children = list(node) if isinstance(node, dict) else range(len(node))
            if not isinstance(node, (dict, list)) or not children:
                break
            child = node[list(children)[index % len(children)]]
            if not isinstance(child, (dict, list)) or not child:
                break
            node = child
        if isinstance(node, dict):
            keys = list(node)
            if add or not keys:
                node[WORDS[len(path) % len(WORDS)]] = value
            else:
                node[keys[sum(path) % len(keys)]] = value
        elif isinstance(node, list) and node:
            node[sum(path) % len(node)] = value
    return doc


def text_of(doc: Any, hurt: tuple[int, str] | None) -> str:
    text = yaml.safe_dump(doc, allow_unicode=True)
    if hurt is not None:
        at = hurt[0] % (len(text) + 1)
        text = text[:at] + hurt[1] + text[at:]
    return text


def located(findings: list[Finding]) -> None:
    for finding in findings:
        assert finding.code and finding.file.startswith("rules/") and finding.line >= 1


@SETTINGS
@given(changes=mutations, hurt=damage, which=st.sampled_from(["rule", "domain"]))
def test_rule_and_domain_files_end_in_findings(changes: Any, hurt: Any, which: str) -> None:
    text = text_of(mutate(BASES[which], changes), hurt)
    sources = {"finance/domain.yaml": DOMAIN, "finance/suitability.yaml": RULE}
    sources["finance/domain.yaml" if which == "domain" else "finance/suitability.yaml"] = text
    _, findings = lint_sources(sources, ENGINE)
    located(findings)


@SETTINGS
@given(changes=mutations, hurt=damage)
def test_cases_files_end_in_findings(tmp_path_factory: Any, changes: Any, hurt: Any) -> None:
    folder: Path = tmp_path_factory.mktemp("rules")
    (folder / "finance").mkdir()
    text = text_of(mutate(BASES["cases"], changes), hurt)
    (folder / "finance" / "suitability.cases.yaml").write_text(text, encoding="utf-8")
    bundle, _ = lint_sources({"finance/domain.yaml": DOMAIN, "finance/suitability.yaml": RULE},
                             ENGINE)  # fmt: skip
    try:
        _, findings = load_cases(folder, bundle)
    except MemkgError as refused:  # a case that cannot be built names its file and line
        assert refused.code and "suitability.cases.yaml" in refused.message
    else:
        located(findings)


@SETTINGS
@given(changes=mutations, hurt=damage)
def test_migration_plans_load_or_are_refused_with_file_line_and_code(
    changes: Any, hurt: Any
) -> None:
    text = text_of(mutate(BASES["plan"], changes), hurt)
    try:
        plan = parse_plan(text, "plan.yaml")
        old = ENGINE.registry.group(plan.domain, plan.group, plan.from_version)
        new = ENGINE.registry.group(plan.domain, plan.to_group, plan.to_version)
        if old and new:
            plan_problems(plan, old, new)
    except MemkgError as refused:
        found = refused.to_dict()
        assert found["error"] and found.get("file") == "plan.yaml" and found.get("line", 0) >= 1
