"""A new source type is declared by a root, not coded: ``sensor`` in a test root's policy.

The root declares ``sensor`` (credibility 0.9) in ``rules/policy.yaml``; a sensor claim is then
validated, stored, weighed with that credibility, arbitrated against a dialogue claim, decided
on by a rule that asks for ``source: [sensor]``, explained and exported, with no change to
memkg. Without the declaration the same write is refused with the sources in force named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memkg import Engine, FrozenClock
from memkg.arbitration.resolution import Outcome, Step
from memkg.cli import main
from memkg.config import EngineConfig
from memkg.engine.rule_bundle import RulesRefused
from memkg.errors import ConfigError, MemkgError, ValidationFailed
from memkg.events.sqlite import SqliteEventStore
from memkg.model.source import Source
from support.observations import T0

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://memkg.dev/schemas/home/comfort@1.json",
    "title": "home / comfort",
    "x-memkg": {"domain": "home", "group": "comfort", "version": 1},
    "type": "object",
    "properties": {
        "room.climate": {
            "type": "string",
            "enum": ["cool", "warm"],
            "x-memkg": {
                "kind": "preference",
                "sensitivity": "public",
                "consent": False,
                "multi": False,
            },
        },
    },
    "additionalProperties": False,
}
DOMAIN = """\
description: Room climate.
default_decision: climate
actions:
  set_cool: {description: Keep the room cool}
  set_warm: {description: Keep the room warm}
"""
TABLE = """\
description: How warm to keep the room.
hit_policy: first
allow_no_match: true
rules:
  - id: home.measured_cool
    description: The thermostat shows the user keeps the room cool.
    when:
      - fact: {key: room.climate, eq: cool, source: [sensor]}
    then: {action: set_cool}
    reason_code: MEASURED_COOL
    explain: "The thermostat shows {room.climate}"
  - id: home.measured_warm
    description: The thermostat shows the user keeps the room warm.
    when:
      - fact: {key: room.climate, min_confidence: 0.5}
      - fact: {key: room.climate, eq: warm, source: [sensor]}
    then: {action: set_warm}
    reason_code: MEASURED_WARM
    explain: "The thermostat shows {room.climate}"
  - id: home.said_warm
    description: The user asked for a warm room.
    when:
      - fact: {key: room.climate, eq: warm, source: [dialogue]}
    then: {action: set_warm}
    reason_code: SAID_WARM
    explain: "Asked for a warm room"
"""
CASES = """\
cases:
  - name: the thermostat's reading decides
    now: "2026-05-01T09:00:00Z"
    facts:
      - {key: room.climate, value: cool, source: sensor, confidence: 0.9}
    expect:
      action: set_cool
      why_not: {home.measured_warm: 1}
"""
DECLARED = """\
version: 1
sources:
  sensor: {credibility: 0.9, description: thermostat readings}
"""


def _root(tmp_path: Path, policy: str | None = DECLARED, rules: str = TABLE) -> Path:
    root = tmp_path / "root"
    (root / "schemas" / "home").mkdir(parents=True)
    (root / "rules" / "home").mkdir(parents=True)
    (root / "schemas" / "home" / "comfort@1.json").write_text(json.dumps(SCHEMA))
    (root / "rules" / "home" / "domain.yaml").write_text(DOMAIN)
    (root / "rules" / "home" / "climate.yaml").write_text(rules)
    (root / "rules" / "home" / "climate.cases.yaml").write_text(CASES)
    if policy is not None:
        (root / "rules" / "policy.yaml").write_text(policy)
    return root


def _said(source: str, value: str, confidence: float) -> dict[str, Any]:
    return {
        "user_id": "ana",
        "domain": "home",
        "key": "room.climate",
        "value": value,
        "source": source,
        "confidence": confidence,
        "observed_at": T0.isoformat(),
    }


def test_a_declared_source_goes_end_to_end(tmp_path: Path) -> None:
    config = EngineConfig(roots=(_root(tmp_path),), examples=False)
    store = SqliteEventStore(tmp_path / "m.db")
    with Engine(store, config=config, clock=FrozenClock(T0)) as engine:
        sensed = engine.ingest(_said("sensor", "cool", 0.9))
        said = engine.ingest(_said("dialogue", "warm", 0.6))

        # stored under its name, read back as a Source
        fact = engine.memory("ana").facts[sensed.fact_id]
        assert fact.source == "sensor" and isinstance(fact.source, Source)
        stored = [
            e.payload["fact"]["source"] for e in engine.read_events("ana") if "fact" in e.payload
        ]
        assert stored == ["sensor", "dialogue"]

        # weighed with the declared credibility, arbitrated against the dialogue claim:
        # 0.9 x 0.9 = 0.81 against 0.6 x 0.7 = 0.42, so the sensor wins and asks (0.2..0.5)
        resolution = engine.resolve("ana", "home", "room.climate")
        assert resolution.value == "cool" and resolution.step is Step.WEIGHTED_EVIDENCE
        assert resolution.outcome is Outcome.PROVISIONAL and resolution.question is not None
        assert resolution.strength == pytest.approx(0.42)
        scores = {c.fact_id: round(c.score, 4) for c in resolution.claims}
        assert scores == {sensed.fact_id: 0.81, said.fact_id: 0.42}

        # decided on by a rule that asks for the sensor, with why_not for the other
        made = engine.decide("ana", "home")
        assert made.result.action == "set_cool"
        assert made.arbitration.selected == ("home.measured_cool",)
        text = engine.explain(made.decision_id)
        assert "room.climate = cool (from sensor)" in text
        assert "cool (sensor" in text  # the fact, with its source
        why_not = {w.rule_id: w.failing for w in made.explanation.why_not}
        assert why_not["home.measured_warm"].text == "room.climate = warm (from sensor)"
        assert why_not["home.measured_warm"].failure == "room.climate is cool"
        assert engine.replay(made.decision_id).reproduced

        # exported with the declared credibility in the weight's breakdown
        graph = engine.graph("ana", "home")
        assert isinstance(graph, dict)
        [edge] = [e for e in graph["edges"] if e["fact_id"] == sensed.fact_id]
        credibility = next(f for f in edge["breakdown"]["factors"] if f["name"] == "credibility")
        assert (credibility["value"], credibility["detail"]) == (0.9, "source sensor")
        turtle = engine.graph("ana", "home", fmt="turtle")
        assert isinstance(turtle, str) and "mk:sensor" in turtle

    # a reopened engine reads the stored sensor claims as they were
    with Engine(SqliteEventStore(tmp_path / "m.db"), config=config, clock=FrozenClock(T0)) as again:
        assert again.resolve("ana", "home", "room.climate").value == "cool"


def test_the_rule_cases_and_lint_accept_a_declared_source(tmp_path: Path, capsys: Any) -> None:
    root = _root(tmp_path)
    assert main(["--root", str(root), "--no-examples", "rules", "test"]) == 0
    assert main(["--root", str(root), "--no-examples", "rules", "lint"]) == 0
    capsys.readouterr()


def test_an_undeclared_source_is_refused_with_the_sources_in_force(tmp_path: Path) -> None:
    rules = TABLE.replace("source: [sensor]", "source: [dialogue]")
    config = EngineConfig(roots=(_root(tmp_path, policy=None, rules=rules),), examples=False)
    with Engine(config=config, clock=FrozenClock(T0)) as engine:
        with pytest.raises(ValidationFailed) as caught:
            engine.ingest(_said("sensor", "cool", 0.9))
        [problem] = caught.value.report.problems
        assert (problem.code, problem.path) == ("source.undeclared", "$.source")
        assert "behavior, dialogue, profile, rule, system, third_party" in problem.message
        assert "rules/policy.yaml under sources" in problem.message
        assert engine.read_events("ana") == []  # nothing stored
        # every other problem of the observation is reported beside it
        report = engine.validate(_said("sensor", "lukewarm", 0.9))
        assert {p.code for p in report.problems} == {"source.undeclared", "schema.enum"}


def test_a_rule_case_naming_an_undeclared_source_is_refused_with_its_line(
    tmp_path: Path, capsys: Any
) -> None:
    root = _root(tmp_path)
    cases = root / "rules" / "home" / "climate.cases.yaml"
    cases.write_text(CASES.replace("source: sensor", "source: gossip"))
    assert main(["--root", str(root), "--no-examples", "rules", "test"]) != 0
    said = capsys.readouterr()
    error = json.loads(said.out or said.err)
    assert error["error"] == "source.undeclared"
    assert error["message"].startswith("rules/home/climate.cases.yaml:2: case \"the thermostat")
    assert "source 'gossip' is not declared" in error["message"]


def test_a_rule_naming_an_undeclared_source_is_refused_with_its_line(tmp_path: Path) -> None:
    config = EngineConfig(roots=(_root(tmp_path, policy=None),), examples=False)
    with (
        Engine(config=config, clock=FrozenClock(T0)) as engine,
        pytest.raises(RulesRefused) as caught,
    ):
        engine.decide("ana", "home")
    found = [(f.code, f.line, f.rule_id) for f in caught.value.findings]
    assert found == [
        ("rule.unknown_source", 8, "home.measured_cool"),
        ("rule.unknown_source", 16, "home.measured_warm"),
    ]
    assert "'sensor' is not declared" in caught.value.findings[0].message


@pytest.mark.parametrize(
    ("policy", "code", "words"),
    [
        (
            "sources:\n  sensor: {}\n",
            "policy.source_credibility",
            "sources.sensor: a declared source needs its credibility",
        ),
        (
            "sources:\n  sensor: {confirmed: true}\n",
            "policy.source_credibility",
            "e.g. sources: {sensor: {credibility: 0.8}}",
        ),
        (
            "sources:\n  sensor: {credibility: 1.5}\n",
            "policy.invalid",
            "sources.sensor.credibility",
        ),
        ("sources:\n  dialogue: {credibility: 0.5}\n", "policy.invalid", "dialogue is built in"),
        (
            "credibility: {sensr: 0.5}\n",
            "policy.invalid",
            "credibility.sensr: source 'sensr' is not declared",
        ),
        (
            "domains:\n  home: {credibility: {gossip: 0.5}}\n",
            "policy.invalid",
            "domains.home.credibility.gossip",
        ),
    ],
)
def test_a_wrong_declaration_fails_at_load_naming_file_and_field(
    tmp_path: Path, policy: str, code: str, words: str
) -> None:
    config = EngineConfig(roots=(_root(tmp_path, policy=policy),), examples=False)
    engine = Engine(config=config, clock=FrozenClock(T0))
    with engine, pytest.raises(ConfigError) as caught:
        engine.ingest(_said("dialogue", "warm", 0.6))
    assert caught.value.code == code
    assert "rules/policy.yaml" in str(caught.value) and words in str(caught.value)


def test_a_stored_claim_whose_declaration_was_removed_is_a_clear_error(tmp_path: Path) -> None:
    store = SqliteEventStore(tmp_path / "m.db")
    declared = EngineConfig(roots=(_root(tmp_path),), examples=False)
    with Engine(store, config=declared, clock=FrozenClock(T0)) as engine:
        engine.ingest(_said("sensor", "cool", 0.9))
    (tmp_path / "root" / "rules" / "policy.yaml").unlink()
    with Engine(SqliteEventStore(tmp_path / "m.db"), config=declared, clock=FrozenClock(T0)) as e:
        assert e.memory("ana").facts  # the events still read
        with pytest.raises(MemkgError) as caught:
            e.resolve("ana", "home", "room.climate")
    assert caught.value.code == "source.undeclared"
    assert "'sensor' has no credibility" in str(caught.value)


def test_a_confirmed_source_holds_its_facts_at_once(tmp_path: Path) -> None:
    schema = json.loads(json.dumps(SCHEMA))
    schema["properties"]["room.climate"]["x-memkg"]["kind"] = "fact"
    root = _root(
        tmp_path,
        policy="sources:\n  registry: {credibility: 0.95, confirmed: true}\n"
        "  sensor: {credibility: 0.9}\n",
    )
    (root / "schemas" / "home" / "comfort@1.json").write_text(json.dumps(schema))
    config = EngineConfig(roots=(root,), examples=False)
    with Engine(config=config, clock=FrozenClock(T0)) as engine:
        record = engine.ingest(_said("registry", "cool", 1.0))
        reading = engine.ingest(_said("sensor", "warm", 1.0))
        facts = engine.memory("ana").facts
        assert facts[record.fact_id].status.value == "active"
        assert facts[reading.fact_id].status.value == "pending_confirmation"
