"""Tables durable-rules' C core cannot register are lint findings, and refuse only their table.

The C core links at most 256 patterns to one chain of identical tests (beyond it, error 108,
``ERR_RULE_BETA_LIMIT_EXCEEDED``), and lets at most 512 distinct tests follow one chain (beyond
it, registering the ruleset never returns): ``compiler.capacity_problems``.
"""

from __future__ import annotations

from typing import Any

import pytest

from memkg.rules.compiler import BETA_LIST_LENGTH, capacity_problems, compile_table
from memkg.rules.durable_runner import DurableRunner, RuleEvaluationError, _MatcherHost
from memkg.rules.lint import lint_bundle
from memkg.rules.loader import load_bundle
from memkg.rules.spec import Finding, RuleTable

DOMAIN = """\
actions:
  book: {description: book it}
context:
  occasion: {type: string}
  n: {type: integer}
"""
CTX = {"t": "context", "occasion": "gift", "today": 0}
"""A request context as the evaluator sends it (never an empty batch: that crashes the C core)."""
HEAD = "hit_policy: first\nallow_no_match: true\nrules:\n"


def table_text(count: int, when: Any) -> str:
    return HEAD + "".join(
        f"  - id: t.r{i}\n    when:\n{when(i)}    then: {{action: book}}\n"
        f"    reason_code: R\n    explain: x\n"
        for i in range(count)
    )


def shared_context(i: int) -> str:
    """Every rule tests the same context (as in the review's repro), facts differ."""
    return f"      - fact: {{key: child.age, gt: {i}}}\n      - context: {{occasion: gift}}\n"


def distinct_context(i: int) -> str:
    return f"      - context: {{n: {i}}}\n"


def load(count: int, when: Any) -> tuple[RuleTable, list[Finding]]:
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/big.yaml": table_text(count, when)})
    assert problems == []
    findings = lint_bundle(bundle, lambda d, k: {"type": "integer"} if k == "child.age" else None)
    return bundle.tables[("t", "big")], findings


def limit_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code == "rule.durable_limit"]


def test_300_rules_sharing_their_context_tests_are_a_finding_naming_limit_and_fix() -> None:
    _, findings = load(300, shared_context)
    [found] = limit_findings(findings)
    assert found.file == "rules/t/big.yaml"
    assert found.rule_id == f"t.r{BETA_LIST_LENGTH}"  # the first rule beyond the limit
    assert "256" in found.message and "300" in found.message and "split" in found.message
    assert "occasion" in found.message  # which tests the rules share


def fact_only(i: int) -> str:
    """Every rule's request-context pattern tests only ``t == context``, as ``DONE``'s does."""
    return f"      - fact: {{key: child.age, gt: {i}}}\n"


def test_the_finding_is_on_the_first_rule_past_the_room_the_compilers_rules_leave() -> None:
    """``DONE`` shares the context chain, so 255 rules fit and ``t.r255`` is the first past."""
    table, findings = load(300, fact_only)
    [found] = limit_findings(findings)
    assert "at most 255 such rules" in found.message
    first_past = table.rules[255]
    assert first_past.id == "t.r255"
    assert (found.rule_id, found.line) == (first_past.id, first_past.line)


def test_the_benchmarks_200_rules_are_no_finding_and_compile() -> None:
    table, findings = load(200, shared_context)
    assert limit_findings(findings) == []
    assert DurableRunner({"t.big": compile_table(table)}).rulesets == {"t.big"}


def test_what_lint_accepts_the_c_core_registers_and_past_the_limit_it_refuses() -> None:
    """Lint keeps to the 256 patterns per chain that always registered (the C core reads one
    entry past its list, so a 257th sometimes registers too); 300 never do."""
    table, findings = load(BETA_LIST_LENGTH, shared_context)
    assert limit_findings(findings) == []
    assert DurableRunner({"t.big": compile_table(table)}).run("t.big", [CTX]) == []
    table, findings = load(255, fact_only)
    assert limit_findings(findings) == []  # 255 context patterns and ``DONE``'s
    table, findings = load(256, fact_only)
    assert len(limit_findings(findings)) == 1
    table, _ = load(300, shared_context)
    with pytest.raises(Exception, match="error code: 108"):  # the C core itself refuses it
        _MatcherHost().set_rulesets({"t.big": compile_table(table)})
    with pytest.raises(RuleEvaluationError, match="108"):  # the runner, before asking it
        DurableRunner({"t.big": compile_table(table)}).run("t.big", [CTX])


def test_more_than_512_distinct_tests_after_one_chain_are_a_finding() -> None:
    table, findings = load(512, distinct_context)
    assert limit_findings(findings) == []
    DurableRunner({"t.big": compile_table(table)})  # 512 registers
    table, findings = load(513, distinct_context)
    [found] = limit_findings(findings)
    assert found.rule_id == "t.r512" and "512" in found.message and "split" in found.message
    assert capacity_problems(compile_table(table))


def test_a_table_over_the_limits_refuses_only_its_own_ruleset_and_never_hangs() -> None:
    small, _ = load(3, shared_context)
    hung, _ = load(513, distinct_context)  # the C core would never return registering it
    shared, _ = load(300, shared_context)
    compiled = {"t.small": small, "t.hung": hung, "t.shared": shared}
    runner = DurableRunner({name: compile_table(table) for name, table in compiled.items()})
    assert runner.run("t.small", [CTX]) == []
    for name in ("t.hung", "t.shared"):
        with pytest.raises(RuleEvaluationError) as caught:
            runner.run(name, [CTX])
        assert caught.value.code == "rules.compile" and name in str(caught.value)


def negated(i: int) -> str:
    """Each rule one ``not`` (a negation flag on the context message) and a context test."""
    return (f"      - not: {{fact: {{key: child.age, eq: {i}}}}}\n"
            f"      - context: {{n: {i}}}\n")  # fmt: skip


@pytest.mark.parametrize("count", [230, 260])
def test_the_context_message_counts_every_negation_flag_of_the_table(count: int) -> None:
    """Each rule alone carries one flag; the context message carries all of the table's, and
    durable-rules crashed on a message of 255 properties: lint says so at load, naming the
    table, rather than every decision failing."""
    _, findings = load(count, negated)
    widths = [f for f in limit_findings(findings) if "context" in f.message]
    if count == 230:  # 8 + 2 declared fields + 230 flags: 240, within the limit
        assert widths == []
        return
    [found] = widths
    assert found.file == "rules/t/big.yaml" and str(8 + 2 + count) in found.message
    assert "negation" in found.message
