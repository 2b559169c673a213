"""The table plan changes no evaluation: over random histories, clock moves and requests, the
near misses found through the plan's distinct tests are those a walk of every rule finds, and
a plan worked out afresh evaluates exactly as the one kept with the bundle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memkg.clock import FrozenClock
from memkg.config import EngineConfig
from memkg.engine import Engine
from memkg.rules.evaluator import MAX_WHY_NOT, Evaluator
from memkg.rules.plan import plan_table

START = datetime(2026, 5, 1, 12, tzinfo=UTC)
CONSENT = {"consent_granted": True, "consent_version": "v1"}
PROTOTYPE = Engine(config=EngineConfig(shacl=False))
CLAIMS: list[tuple[str, Any, str]] = [
    ("child.age", 3, "profile"),
    ("child.age", 8, "dialogue"),
    ("medical.conditions", ["condition:asthma"], "profile"),
    ("medical.conditions", ["condition:epilepsy", "condition:pregnancy"], "third_party"),
    ("medical.allergies", ["allergen:penicillin"], "profile"),
    ("medication.current", ["aspirin"], "dialogue"),
    ("bp.reading", {"systolic": 190, "diastolic": 100}, "system"),
]
CONTEXTS = [
    ("triage", {"symptom": "fever"}),
    ("triage", {"symptom": "chest_pain", "temperature_c": 39.7}),
    ("triage", {"symptom": "dizziness"}),
    ("medication", {"allergen": "allergen:penicillin", "drug_class": "antibiotic"}),
    ("medication", {"drug_class": "warfarin"}),
]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, len(CLAIMS) - 1)),
        st.tuples(st.just("wait"), st.integers(1, 60 * 24 * 40)),
    ),
    max_size=10,
)


class _Unplanned(Evaluator):
    """The same matcher, with every plan worked out on the spot."""

    def plan(self, table: Any) -> Any:
        return plan_table(table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.integers(0, len(CONTEXTS) - 1))
def test_plan_keeps_every_evaluation(history: list[tuple[str, int]], request: int) -> None:
    clock = FrozenClock(START)
    engine = Engine(clock=clock, config=PROTOTYPE.config)
    for op, arg in history:
        if op == "write":
            key, value, source = CLAIMS[arg]
            engine.ingest({"user_id": "u", "domain": "health", "key": key, "value": value,
                           "source": source, "confidence": 1.0, "provenance": CONSENT})  # fmt: skip
        else:
            clock.advance(timedelta(minutes=arg))
    rules = PROTOTYPE.intent.rules
    name, context = CONTEXTS[request]
    table = rules.bundle.table("health", name)
    assert table is not None
    graph = engine.user_graph("u")
    inp = engine.intent._input(rules, table, "u", dict(context), graph, clock.now())
    planned = rules.evaluator.evaluate(table, inp)
    walked = rules.evaluator.evaluate(table, inp, walk_all=True)
    assert planned.candidates == walked.candidates
    assert planned.fired == walked.fired
    assert planned.why_not == walked.why_not[:MAX_WHY_NOT]
    fresh = _Unplanned(rules.bundle, rules.evaluator.runner).evaluate(table, inp)
    assert (fresh.candidates, fresh.fired, fresh.why_not) == (
        planned.candidates,
        planned.fired,
        planned.why_not,
    )
