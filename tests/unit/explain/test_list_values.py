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
from memkg.model.decision import Decision

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
  - id: pets.named_tags
    when:
      - fact: {key: pets.tags, as: t}
    then: {action: suggest_item}
    reason_code: NAMED
    explain: "tags: {t}"
  - id: pets.each_tag
    when:
      - fact: {key: pets.tags, as: t}
      - context: {occasion: $t}
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


def _tagged(engine: Engine, tags: list[str]) -> Decision:
    """A decision of the tags table for a user whose tags are ``tags``."""
    engine.ingest({"user_id": "u", "domain": "pets", "key": "pets.tags", "value": tags,
                   "source": "dialogue", "confidence": 0.9,
                   "provenance": {"consent_granted": True, "consent_version": "v1",
                                  "purpose": "advice"}})  # fmt: skip
    return engine.decide("u", "pets", {"occasion": "gift"}, decision="tags")


def test_a_list_is_shown_whole_unless_an_item_is_tested(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        made = _tagged(engine, ["cat", "dog"])
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
        # bound with as:, it binds the whole value too, but the item where another
        # condition joins on it (eq: $t, contains: $t)
        named = by_rule["pets.named_tags"].conditions[0]
        assert named.bindings == {"t": ["cat", "dog"]} and "tags: cat, dog" in made.result.message
        assert "pets.each_tag" not in by_rule  # no tag is the occasion
        assert engine.replay(made.decision_id).reproduced


def test_a_name_another_condition_joins_on_binds_the_item(tmp_path: Path) -> None:
    with _engine(tmp_path) as engine:
        made = _tagged(engine, ["toy", "gift"])
        by_rule = {r.rule_id: r for r in made.explanation.selected}
        each = by_rule["pets.each_tag"].conditions[0]
        assert each.bindings == {"t": "gift"} and "a tag: gift" in made.result.message
        assert by_rule["pets.named_tags"].conditions[0].bindings == {"t": ["toy", "gift"]}


def test_a_record_made_before_lists_showed_whole_replays_as_it_was(tmp_path: Path) -> None:
    """The shipped rule ``health.med_current_medication`` reads ``medication.current`` bound
    ``as: current`` and says "Already takes {current}": it said one of the drugs, now all of
    them. A record the earlier recorder made (4) is made again as it made it, and reproduces."""
    import sqlite3

    from memkg.engine.replay import graph_as_of

    db = tmp_path / "m.db"
    clock = FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    with Engine.open(db, clock=clock, config=EngineConfig(shacl=False)) as engine:
        engine.ingest({"user_id": "u", "domain": "health", "key": "medication.current",
                       "value": ["aspirin", "metformin", "lisinopril"], "source": "dialogue",
                       "confidence": 0.95, "provenance": {"consent_granted": True,
                                                          "consent_version": "v1"}})  # fmt: skip
        for fact in engine.facts("u", "health"):
            if fact.status.value == "pending_confirmation":
                engine.confirm("u", fact.id)
        made = engine.decide("u", "health", {"drug_class": "warfarin"}, decision="medication")
        assert made.result.message.startswith("Already takes aspirin, metformin, lisinopril")
        # as the earlier recorder made it: the item the condition matched
        earlier = made.model_copy(update={"revisions": made.revisions.model_copy(
            update={"recorder": 4})})  # fmt: skip
        graph = graph_as_of(engine.setup, engine.projections, "u", made.as_of_seq)
        old = engine.intent.redecide(engine.intent.rules, earlier, graph)
        assert old.result.message.startswith("Already takes aspirin:")
        assert old.explanation.selected[0].conditions[0].bindings == {"current": "aspirin"}
        record = old.model_copy(update={"revisions": earlier.revisions}).model_dump_json()
    with sqlite3.connect(db) as con:
        con.execute("UPDATE decisions SET record = ? WHERE decision_id = ?",
                    (record, made.decision_id))  # fmt: skip
    with Engine.open(db, clock=clock, config=EngineConfig(shacl=False)) as engine:
        report = engine.replay(made.decision_id)
        assert report.reproduced, report.differences
        assert engine.explain(made.decision_id).count("Already takes aspirin:") >= 1
