"""A list value is shown as the list it is: a condition that asks only that the key is known
binds, shows and fills its placeholder with the whole value; one that tests an item shows the
item as one of the list's, never as the value."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from memkg import Engine, FrozenClock
from memkg.cli import main
from memkg.config import EngineConfig

RULES = """\
description: tags
hit_policy:
  collect: {action: suggest_item, aggregate: count}
allow_no_match: true
rules:
  - id: pets.has_cat
    when:
      - fact: {key: pets.tags, contains: cat}
    then: {action: suggest_item}
    reason_code: CAT
    explain: "has a cat: {pets.tags}"
  - id: pets.any_tags
    when:
      - fact: {key: pets.tags}
    then: {action: suggest_item}
    reason_code: ANY
    explain: "lives with {pets.tags}"
  - id: pets.each_tag
    when:
      - fact: {key: pets.tags, as: t}
    then: {action: suggest_item}
    reason_code: EACH
    explain: "a tag: {t}"
"""


def _engine(tmp_path: Path) -> Engine:
    root = tmp_path / "mine"
    assert main(["init", str(root), "--domain", "pets"], io.StringIO()) == 0
    schema = root / "schemas/pets/profile@1.json"
    declared = json.loads(schema.read_text())
    declared["properties"]["pets.tags"] = {
        "type": "array", "items": {"type": "string"},
        "x-memkg": {"kind": "preference", "sensitivity": "public"},
    }  # fmt: skip
    schema.write_text(json.dumps(declared))
    (root / "rules/pets/tags.yaml").write_text(RULES)
    config = EngineConfig(roots=(root,), examples=False, shacl=False)
    return Engine(config=config, clock=FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC)))


def test_a_list_is_shown_whole_unless_an_item_is_tested(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        engine.ingest({"user_id": "u", "domain": "pets", "key": "pets.tags",
                       "value": ["cat", "dog"], "source": "dialogue", "confidence": 0.9,
                       "provenance": {"consent_granted": True, "consent_version": "v1",
                                      "purpose": "advice"}})  # fmt: skip
        made = engine.decide("u", "pets", {"occasion": "gift"}, decision="tags")
        assert made.result.status.value == "decided", made.result
        # the placeholder of a key asked only to be known is its whole value
        assert "lives with cat, dog" in made.result.message
        by_rule = {r.rule_id: r for r in made.explanation.selected}
        known = by_rule["pets.any_tags"].conditions[0]
        assert known.bindings == {"pets.tags": ["cat", "dog"]}
        assert [(f.value, f.item) for f in known.facts] == [(["cat", "dog"], None)]
        # a contains test binds the item it matched, shown as one of the list's items
        tested = by_rule["pets.has_cat"].conditions[0]
        assert tested.bindings == {"pets.tags": "cat"}
        assert [(f.value, f.item) for f in tested.facts] == [(["cat", "dog"], "cat")]
        told = engine.explain(made.decision_id, "text")
        assert "pets.tags is cat, dog (said in conversation" in told
        assert "pets.tags holds cat (its items: cat, dog; said in conversation" in told
        assert "pets.tags is cat (" not in told and "pets.tags is dog (" not in told
        # bound with as:, a condition binds the item (a later condition may join on it)
        each = by_rule["pets.each_tag"].conditions[0]
        assert each.bindings == {"t": "cat"} and "a tag: cat;" in made.result.message + ";"
        assert engine.replay(made.decision_id).reproduced
