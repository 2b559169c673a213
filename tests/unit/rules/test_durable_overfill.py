"""A message that passes more than 63 of a table's tests at once: durable-rules' C core runs
no action of such a batch (error code 303, ``ERR_NO_ACTION_AVAILABLE``), so the runner runs
the table as halves of its rules from then on, which fire together what the whole would.

The case: rules comparing one fact's value with many thresholds (a ladder), and a value past
64 of them.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.rules.compiler import compile_table
from memkg.rules.durable_runner import DurableRunner
from memkg.rules.loader import load_bundle
from memkg.rules.python_runner import PythonRuleRunner
from memkg.rules.spec import RuleTable

DOMAIN = "actions:\n  book: {description: book it}\ncontext:\n  occasion: {type: string}\n"
CTX = {"t": "context", "occasion": "gift", "today": 0}


def ladder(count: int, extra: str = "") -> str:
    return "hit_policy: first\nallow_no_match: true\nrules:\n" + "".join(
        f"  - id: t.r{i}\n    when:\n      - fact: {{key: child.age, gt: {i}}}\n{extra}"
        "    then: {action: book}\n    reason_code: R\n    explain: x\n"
        for i in range(count)
    )


def table(text: str) -> RuleTable:
    bundle, problems = load_bundle({"t/domain.yaml": DOMAIN, "t/big.yaml": text})
    assert problems == []
    return bundle.tables[("t", "big")]


def fact(value: Any) -> dict[str, Any]:
    return {"t": "fact", "key": "child.age", "value": value}


def fired(runner: Any, messages: list[dict[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    return sorted((f.rule, sorted(f.bound.items())) for f in runner.run("t.big", messages))


@pytest.mark.parametrize("age", [63, 64, 100, 1_000])
@pytest.mark.parametrize("extra", ["", "      - context: {occasion: gift}\n"])
def test_a_ladder_fires_every_rung_the_value_passes_as_the_python_runner_does(
    age: int, extra: str
) -> None:
    t = table(ladder(200, extra))
    durable = DurableRunner({"t.big": compile_table(t)})
    messages = [fact(age), CTX]
    got = fired(durable, messages)
    assert len(got) == min(age, 200)  # gt 0 .. gt age-1
    assert got == fired(PythonRuleRunner({"t.big": t}), messages)
    # the same runner, again and with a value that overfills nothing: the same answers
    assert fired(durable, messages) == got
    assert len(fired(durable, [fact(5), CTX])) == 5


def test_two_facts_each_under_the_limit_but_over_it_together() -> None:
    """Rules of two patterns: one message passes 30 ``gt`` tests and all 100 ``lt`` ones."""
    text = "hit_policy: first\nallow_no_match: true\nrules:\n" + "".join(
        f"  - id: t.r{i}\n    when:\n      - fact: {{key: child.age, gt: {i}}}\n"
        f"      - fact: {{key: child.age, lt: {1000 + i}}}\n"
        "    then: {action: book}\n    reason_code: R\n    explain: x\n"
        for i in range(100)
    )
    t = table(text)
    messages = [fact(30), fact(31), CTX]
    got = fired(DurableRunner({"t.big": compile_table(t)}), messages)
    assert got == fired(PythonRuleRunner({"t.big": t}), messages)
    assert len(got) == 30 * 2 + 1  # r0..r29 two ways (either fact for either pattern), r30 one


def test_an_engine_decides_over_a_ladder_and_replays_it(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    assert main(["init", str(root), "--domain", "pets"], io.StringIO()) == 0
    rules = "".join(
        f"  - id: pets.r{i}\n    when:\n      - fact: {{key: pets.budget, gt: {i}}}\n"
        "    then: {action: ask_preference}\n    reason_code: R\n    explain: x\n"
        for i in range(100)
    )
    big = "description: big\nhit_policy: first\nallow_no_match: true\nrules:\n" + rules
    (root / "rules/pets/big.yaml").write_text(big)
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    with Engine(config=config) as engine:
        consent = {"consent_granted": True, "consent_version": "v1"}
        engine.ingest({"user_id": "ana", "domain": "pets", "key": "pets.budget", "value": 500,
                       "source": "dialogue", "provenance": consent})  # fmt: skip
        made = engine.decide("ana", "pets", {}, decision="big")
        assert made.result.status == "decided"
        assert len(made.candidates) == 100
        assert engine.replay(made.decision_id).reproduced
