"""A ``collect`` aggregate must fit the parameter its action declares, as each rule's does."""

from __future__ import annotations

import io
from pathlib import Path

from memkg import Engine
from memkg.cli import main
from memkg.config import EngineConfig

DOMAIN = """\
description: pets
default_decision: flags
actions:
  suggest_item:
    description: Suggest an item
    parameters:
      item: {type: string}
  ask_preference:
    description: Ask
  flag:
    description: Flag the sale with its points
    parameters:
      points: {type: integer, minimum: 0, maximum: 50}
context:
  occasion: {type: string, enum: [everyday, gift]}
"""


def _rule(n: int, points: int) -> str:
    return (f"  - id: pets.f{n}\n    when:\n      - context: {{occasion: gift}}\n"
            f"    then: {{action: flag, parameters: {{points: {points}}}}}\n"
            "    reason_code: R\n    explain: x\n")  # fmt: skip


def test_a_sum_past_the_declared_maximum_is_a_hit_policy_violation(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    assert main(["init", str(root), "--domain", "pets"], io.StringIO()) == 0
    (root / "rules/pets/domain.yaml").write_text(DOMAIN)
    (root / "rules/pets/flags.yaml").write_text(
        "description: flags\nhit_policy:\n  collect: {action: flag, aggregate: sum, of: points}\n"
        "allow_no_match: true\nrules:\n" + _rule(1, 30) + _rule(2, 30)
    )
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    with Engine(config=config) as engine:
        made = engine.decide("u1", "pets", {"occasion": "gift"}, decision="flags")
        assert made.result.status.value == "hit_policy_violation", made.result
        assert made.result.action is None and made.result.parameters == {}
        told = engine.explain(made.decision_id)
        assert "points=60 does not fit" in told
        # no rule disagreed: the summary says what went wrong, not that the rules disagree
        assert "collected, do not fit the action" in told and "disagree" not in told
        assert engine.replay(made.decision_id).reproduced
        (root / "rules/pets/flags.yaml").write_text(
            (root / "rules/pets/flags.yaml").read_text().replace("points: 30", "points: 20")
        )
        engine.reload_rules()
        fine = engine.decide("u1", "pets", {"occasion": "gift"}, decision="flags")
        assert (fine.result.status.value, fine.result.parameters) == ("decided", {"points": 40})
