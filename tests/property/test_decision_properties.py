"""Decisions over random histories: replay reproduces every logged decision, the outcome does not
depend on the order equal-time facts were written in, and the Python walk agrees with
durable-rules on which rules match."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg.clock import FrozenClock
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.errors import MemkgError
from memkg.model.decision import Decision

START = datetime(2026, 5, 1, 12, tzinfo=UTC)
CONSENT = {"consent_granted": True, "consent_version": "v1"}
PROTOTYPE = Engine(config=EngineConfig(shacl=False))
_SHARED = ("ontology", "registry", "validator", "knowledge", "entity_keys", "reader")
CLAIMS: list[tuple[str, Any, str, float]] = [
    ("child.age", 3, "profile", 1.0),
    ("child.age", 8, "profile", 1.0),
    ("child.age", 0, "dialogue", 0.9),
    ("medical.conditions", ["condition:asthma"], "profile", 1.0),
    ("medical.conditions", ["condition:asthma", "condition:epilepsy"], "third_party", 0.95),
    ("medical.conditions", ["condition:pregnancy"], "profile", 1.0),
    ("medical.allergies", ["allergen:penicillin"], "profile", 1.0),
    ("medication.current", ["aspirin"], "dialogue", 0.9),
    ("bp.reading", {"systolic": 190, "diastolic": 100}, "system", 1.0),
    ("timezone", "Asia/Shanghai", "profile", 1.0),
]
CONTEXTS = [
    ("triage", {"symptom": "fever"}),
    ("triage", {"symptom": "fever", "temperature_c": 39.7}),
    ("triage", {"symptom": "chest_pain"}),
    ("triage", {"symptom": "dizziness"}),
    ("medication", {"allergen": "allergen:penicillin", "drug_class": "antibiotic"}),
    ("medication", {"drug_class": "warfarin"}),
]


def engine(clock: FrozenClock) -> Engine:
    made = Engine(clock=clock, config=PROTOTYPE.config)
    for name in _SHARED:  # parsed once for the module: read-only
        made.setup.__dict__[name] = getattr(PROTOTYPE.setup, name)
    made.intent.swap(PROTOTYPE.intent.rules)
    return made


def observation(index: int) -> dict[str, Any]:
    key, value, source, confidence = CLAIMS[index]
    return {
        "user_id": "u",
        "domain": "health",
        "key": key,
        "value": value,
        "source": source,
        "confidence": confidence,
        "provenance": CONSENT,
    }


Step = tuple[str, int]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, len(CLAIMS) - 1)),
        st.tuples(st.just("retract"), st.integers(0, 20)),
        st.tuples(st.just("confirm"), st.integers(0, 20)),
        st.tuples(st.just("wait"), st.integers(1, 60 * 30)),
        st.tuples(st.just("decide"), st.integers(0, len(CONTEXTS) - 1)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_replay_reproduces_every_logged_decision(history: list[Step]) -> None:
    clock = FrozenClock(START)
    e = engine(clock)
    made: list[Decision] = []
    for op, arg in [*history, ("decide", 0)]:
        facts = [f for f in e.memory("u").facts.values()]
        with contextlib.suppress(MemkgError):  # writes the fact layer refuses are fine here
            if op == "write":
                e.ingest(observation(arg))
            elif op == "retract" and facts:
                e.retract("u", facts[arg % len(facts)].id, "random history")
            elif op == "confirm" and facts:
                e.confirm("u", facts[arg % len(facts)].id)
        if op == "wait":
            clock.advance(timedelta(minutes=arg))
        elif op == "decide":
            name, context = CONTEXTS[arg]
            made.append(e.decide("u", "health", context, decision=name))
    for decision in made:
        report = e.replay(decision.decision_id)
        assert report.reproduced, report.differences


def _outcome(d: Decision) -> tuple[Any, ...]:
    arbitration = d.arbitration.model_dump() if d.arbitration else None
    return (
        d.result.model_dump(),
        arbitration,
        [(c.rule_id, c.message) for c in d.candidates],
        [(w.rule_id, w.failing.index) for w in d.explanation.why_not],
        sorted((lo.key, lo.reason) for lo in d.left_out),
    )


DISTINCT = [0, 2, 3, 4, 6, 7, 8, 9]
"""Claims of distinct (key, source): none replaces another, whatever the order (a source
restating a key replaces its own earlier claim by design, so order matters there)."""


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(DISTINCT), st.integers(0, len(CONTEXTS) - 1))
def test_write_order_of_equal_time_facts_does_not_matter(order: list[int], ctx: int) -> None:
    name, context = CONTEXTS[ctx]
    outcomes = []
    for sequence in (sorted(order), order):
        e = engine(FrozenClock(START))
        for index in sequence:
            with contextlib.suppress(MemkgError):
                e.ingest(observation(index))
        outcomes.append(_outcome(e.decide("u", "health", context, decision=name)))
    assert outcomes[0] == outcomes[1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sets(st.integers(0, len(CLAIMS) - 1)), st.integers(0, len(CONTEXTS) - 1), st.integers(0, 23)
)
def test_python_walk_agrees_with_durable_rules(chosen: set[int], ctx: int, hour: int) -> None:
    e = engine(FrozenClock(START.replace(hour=hour)))
    for index in sorted(chosen):
        with contextlib.suppress(MemkgError):
            e.ingest(observation(index))
    name, context = CONTEXTS[ctx]
    decision = e.decide("u", "health", context, decision=name)
    table = e.intent.rules.bundle.tables[("health", name)]
    durable = {c.rule_id for c in decision.candidates}
    from memkg.rules.matcher import check_rule, pools  # the walk behind why_not

    graph = e.user_graph("u")
    inp = e.intent._input(
        e.intent.rules, table, "u", dict(context), graph, e.clock.now()
    )
    walked = {r.id for r in table.rules if check_rule(r, inp, pools(inp.items)).failing is None}
    assert walked == durable
