"""What ``rule.pairs`` warns of: a rule with two conditions on one key's values matches every
ordered pair of them, on durable-rules and the Python runner alike; the warning does not
refuse the rules."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest

from memkg import Engine
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.rules.compiler import compile_table, rule_name, ruleset_name
from memkg.rules.durable_runner import DurableRunner
from memkg.rules.loader import load_bundle
from memkg.rules.python_runner import PythonRuleRunner

DOMAIN = "actions:\n  book: {description: book it}\n"
RULES = """\
hit_policy: first
allow_no_match: true
rules:
  - id: t.pairs
    when:
      - fact: {key: medication.current}
      - fact: {key: medication.current}
    then: {action: book}
    reason_code: R
    explain: x
  - id: t.joined
    when:
      - fact: {key: medication.current, as: first}
      - fact: {key: medication.current, contains: $first}
    then: {action: book}
    reason_code: R
    explain: x
"""


def test_two_conditions_on_one_key_match_every_pair_of_its_values() -> None:
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/p.yaml": RULES})
    assert problems == []
    table = bundle.tables[("t", "p")]
    name = ruleset_name(table)
    runners = [DurableRunner({name: compile_table(table)}), PythonRuleRunner({name: table})]
    pairs, joined = (rule_name(r) for r in table.rules)
    for n in (3, 6, 12):
        messages = [{"t": "fact", "key": "medication.current", "value": f"drug{i}"}
                    for i in range(n)]  # fmt: skip
        messages.append({"t": "context", "today": 0})
        for runner in runners:
            fired = [f.rule for f in runner.run(name, [dict(m) for m in messages])]
            assert fired.count(pairs) == n * (n - 1)
            assert joined not in fired  # no two messages hold one value
        twice = [*messages[:-1], dict(messages[0]), messages[-1]]  # a value held twice
        for runner in runners:
            fired = [f.rule for f in runner.run(name, [dict(m) for m in twice])]
            assert fired.count(joined) == 2 and fired.count(pairs) == (n + 1) * n


def test_a_warning_loads_and_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "mine"
    assert main(["init", str(root), "--domain", "pets"], io.StringIO()) == 0
    (root / "rules/pets/pairs.yaml").write_text(
        "description: pairs\nhit_policy: first\nallow_no_match: true\nrules:\n"
        "  - id: pets.pairs\n    when:\n      - fact: {key: pets.budget}\n"
        "      - fact: {key: pets.budget}\n"
        "    then: {action: ask_preference}\n    reason_code: R\n    explain: x\n"
    )
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    with caplog.at_level(logging.WARNING, logger="memkg"), Engine(config=config) as engine:
        assert ("pets", "pairs") in engine.intent.rules.bundle.tables
    logged = [r.getMessage() for r in caplog.records if "rule.pairs" in r.getMessage()]
    assert len(logged) == 1 and "pets.pairs" in logged[0]
