"""Signals, edges, paths, recent entities and as-of queries through the engine."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from memkg.clock import FrozenClock
from memkg.engine import Engine, IngestResult
from memkg.errors import InvalidOperation
from memkg.model.weight import WeightParams

THRESHOLD = WeightParams().threshold
Observe = Callable[..., IngestResult]


def test_a_rejection_halves_the_weight_and_two_mentions_lift_it(
    engine: Engine, observe: Observe, clock: FrozenClock
) -> None:
    observe("u1", "travel", "airline.preferred", "airline:MU")
    weight = lambda: engine.edges("u1", "travel", "airline.preferred")[0].weight  # noqa: E731
    assert weight() == pytest.approx(0.63)
    event = engine.signal("u1", "travel", "airline.preferred", "airline:MU", "rejected")
    assert weight() == pytest.approx(0.315)
    [edge] = engine.edges("u1", "travel", "airline.preferred")
    assert [f.event_id for f in edge.breakdown.factors if f.name == "rejection"] == [event.event_id]
    assert engine.edges("u1", "travel", "airline.preferred", min_weight=THRESHOLD) == []
    for _ in range(2):
        clock.advance(timedelta(days=1))
        engine.signal("u1", "travel", "airline.preferred", "airline:MU", "mention")
    assert weight() == pytest.approx(0.63 * 0.95 ** (2 / 30) * (1 + 0.8 * 0.9 + 0.8) * 0.5)
    assert engine.edges("u1", "travel", "airline.preferred", decidable_only=True)


def test_a_signal_counts_only_for_claims_recorded_before_it(
    engine: Engine, observe: Observe
) -> None:
    observe("u1", "travel", "airline.preferred", "airline:MU")
    engine.signal("u1", "travel", "airline.preferred", "airline:MU", "rejected")
    observe("u1", "travel", "airline.preferred", "airline:MU", source="behavior")
    weights = sorted(e.weight for e in engine.edges("u1", "travel"))
    assert weights == pytest.approx([0.315, 0.81])


@pytest.mark.parametrize(
    ("key", "value", "kind", "code"),
    [
        ("airline.preferred", "airline:MU", "loved", "signal.kind"),
        ("airline.preferred", "airline:CA", "mention", "signal.no_edge"),
        ("airline.preferred", ["airline:MU"], "mention", "signal.value"),
        ("seat.preference", "window", "mention", "signal.no_edge"),
    ],
)
def test_a_signal_needs_a_kind_and_a_live_edge(
    engine: Engine, observe: Observe, key: str, value: object, kind: str, code: str
) -> None:
    observe("u1", "travel", "airline.preferred", "airline:MU")
    with pytest.raises(InvalidOperation) as caught:
        engine.signal("u1", "travel", key, value, kind)
    assert caught.value.code == code
    assert engine.store.stream_version("u1") == 1


def test_literal_values_are_weighted_edges_too(engine: Engine, observe: Observe) -> None:
    observe("u1", "travel", "seat.preference", "window")
    engine.signal("u1", "travel", "seat.preference", "window", "ignored")
    [edge] = engine.edges("u1", "travel")
    assert edge.target == 'value:travel/seat.preference="window"'
    assert edge.weight == pytest.approx(0.63 * 0.7)


def test_paths_show_pending_facts_but_only_confirmed_ones_are_decidable(
    engine: Engine, observe: Observe
) -> None:
    stored = observe("u1", "health", "medical.conditions", ["condition:asthma"],
                     provenance={"consent_granted": True})  # fmt: skip
    [path] = engine.paths("u1", "protocol:immediate_hospital_visit", domain="health")
    assert [(h.relation, h.target) for h in path.hops] == [
        ("medical.conditions", "condition:asthma"),
        ("requires", "protocol:immediate_hospital_visit"),
    ]
    assert [h.weight for h in path.hops] == pytest.approx([0.63, 0.92])
    assert path.weight == pytest.approx(0.63)  # the weakest hop, as decisions read it
    assert not path.decidable
    assert engine.paths("u1", "protocol:immediate_hospital_visit", decidable_only=True) == []
    engine.confirm("u1", stored.fact_id)
    [path] = engine.paths("u1", "protocol:immediate_hospital_visit", decidable_only=True)
    assert path.decidable
    assert engine.paths("u1", "protocol:immediate_hospital_visit", max_depth=1) == []
    assert engine.paths("u1", "protocol:immediate_hospital_visit", domain="travel") == []


def test_recent_entities_resolve_the_item_shown_last(
    engine: Engine, observe: Observe, clock: FrozenClock
) -> None:
    for product in ("product:iphone_16", "product:mate_70", "product:redmi_note_14"):
        observe("u1", "commerce", "product.viewed", product, source="behavior",
                scope="session", session_id="s1")  # fmt: skip
        clock.advance(timedelta(minutes=1))
    observe("u1", "commerce", "product.viewed", "product:thinkpad_x1", source="behavior",
            scope="session", session_id="s2")  # fmt: skip
    found = engine.recent_entities("u1", "product", "s1")
    assert [e.ref for e in found] == ["product:redmi_note_14", "product:mate_70",
                                      "product:iphone_16"]  # fmt: skip
    assert found[0].label == "Redmi Note 14" and found[0].type == "Product"
    assert [e.ref for e in engine.recent_entities("u1", "Product", "s1", limit=1)] == [
        "product:redmi_note_14"
    ]
    clock.advance(timedelta(minutes=1))
    engine.signal("u1", "commerce", "product.viewed", "product:redmi_note_14", "mention",
                  session_id="s1")  # fmt: skip
    assert engine.recent_entities("u1", "brand", "s1") == []


def test_holding_answers_as_memory_stood_at_a_time(
    engine: Engine, observe: Observe, clock: FrozenClock
) -> None:
    first = observe("u1", "travel", "airline.preferred", "airline:MU")
    then = clock.now()
    clock.advance(timedelta(days=10))
    engine.retract("u1", first.fact_id, "user asked to forget it")
    observe("u1", "travel", "airline.preferred", "airline:CA")
    assert [e.target for e in engine.holding("u1", then, "travel")] == ["airline:MU"]
    assert [e.target for e in engine.edges("u1", "travel")] == ["airline:CA"]


def test_the_graph_as_of_a_log_position(engine: Engine, observe: Observe) -> None:
    first = observe("u1", "travel", "airline.preferred", "airline:MU")
    observe("u1", "travel", "airline.preferred", "airline:CA", change=True)
    old = engine.graph("u1", "travel", as_of=first.seq)
    assert isinstance(old, dict)
    assert [e["target"] for e in old["edges"]] == ["airline:MU"]
    now = engine.graph("u1", "travel")
    assert isinstance(now, dict)
    assert [e["target"] for e in now["edges"]] == ["airline:CA"]


def test_erasure_drops_the_cached_graph(engine: Engine, observe: Observe) -> None:
    observe("u1", "travel", "airline.preferred", "airline:MU")
    assert engine.edges("u1", "travel")
    engine.erase("u1")
    assert engine.edges("u1", "travel") == []
