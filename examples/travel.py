"""Travel: a rejected airline stops being recommended until new mentions lift it again.

A user says they prefer China Eastern (``airline:MU``), then rejects a China Eastern offer:
the edge weight halves and falls under the threshold, so the airlines to recommend no longer
include it. Two later mentions lift it back above the threshold. Each step prints the weight
and its breakdown. Run: ``python examples/travel.py``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

try:
    import memkg
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
    import memkg

USER, DOMAIN, KEY, AIRLINE = "traveller_1", "travel", "airline.preferred", "airline:MU"


@dataclass(frozen=True)
class Step:
    what: str
    weight: float
    recommended: list[str]
    edge: memkg.Edge


def run() -> list[Step]:
    clock = memkg.FrozenClock(datetime(2026, 5, 1, 9, tzinfo=UTC))
    engine = memkg.Engine(clock=clock)
    steps: list[Step] = []

    def step(what: str) -> None:
        [edge] = engine.edges(USER, DOMAIN, relation=KEY)
        recommend = engine.edges(USER, DOMAIN, relation=KEY, decidable_only=True)
        steps.append(Step(what, edge.weight, [e.target for e in recommend], edge))

    engine.ingest({"user_id": USER, "domain": DOMAIN, "key": KEY, "value": AIRLINE,
                   "source": "dialogue", "confidence": 0.9,
                   "provenance": {"source_ref": "dialogue_turn_3"}})  # fmt: skip
    step("says: I prefer China Eastern")
    engine.signal(USER, DOMAIN, KEY, AIRLINE, "rejected")
    step("rejects a China Eastern offer")
    clock.advance(timedelta(days=1))
    engine.signal(USER, DOMAIN, KEY, AIRLINE, "mention")
    step("a day later, mentions China Eastern")
    clock.advance(timedelta(days=1))
    engine.signal(USER, DOMAIN, KEY, AIRLINE, "mention")
    step("another day later, mentions it again")
    return steps


def main() -> None:
    threshold = memkg.WeightParams().threshold
    for number, s in enumerate(run(), start=1):
        print(f"{number}. {s.what}: weight {s.weight:.3f} "
              f"({'at or above' if s.weight >= threshold else 'below'} {threshold}); "
              f"airlines to recommend: {s.recommended or 'none'}")  # fmt: skip
        for factor in s.edge.breakdown.factors:
            cause = f"  [{factor.event_id}]" if factor.event_id else ""
            print(f"     {factor.name:<12} {factor.value:6.3f}  {factor.detail}{cause}")


if __name__ == "__main__":
    main()
