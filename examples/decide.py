"""Decisions in all four domains: observations in, a decision out, and why, in plain words.

Each scenario ingests what an agent learned about a user, asks memkg what to do, prints the
explanation, and checks that the logged decision replays exactly. Run: ``python examples/decide.py``
(``make demo`` runs it after the memory demo). A frozen clock makes the output the same
everywhere; no network, no API key.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    import memkg
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
    import memkg

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}


def _engine(at: datetime) -> tuple[memkg.Engine, memkg.FrozenClock]:
    clock = memkg.FrozenClock(at)
    return memkg.Engine(clock=clock), clock


def _ingest(engine: memkg.Engine, user: str, domain: str, *claims: dict[str, Any]) -> list[str]:
    return [engine.ingest({"user_id": user, "domain": domain, **claim}).fact_id for claim in claims]


def health() -> list[memkg.Decision]:
    """A parent in Shanghai: a 3-year-old with asthma has a fever at 22:15, then at 14:00."""
    engine, clock = _engine(datetime(2026, 5, 1, 14, 15, tzinfo=UTC))  # 22:15 in Shanghai
    _, _, asthma = _ingest(
        engine,
        "mei",
        "health",
        {"key": "timezone", "value": "Asia/Shanghai", "source": "profile"},
        {"key": "child.age", "value": 3, "source": "profile", "provenance": CONSENT},
        {
            "key": "medical.conditions",
            "value": ["condition:asthma"],
            "source": "profile",
            "provenance": {**CONSENT, "source_ref": "clinic:record/7"},
        },
    )
    night = engine.decide("mei", "health", {"symptom": "fever"})
    clock.set(datetime(2026, 5, 1, 6, 0, tzinfo=UTC))  # 14:00 in Shanghai
    day = engine.decide("mei", "health", {"symptom": "fever"})
    clock.set(datetime(2026, 5, 1, 14, 30, tzinfo=UTC))
    engine.retract("mei", asthma, "the diagnosis was for a sibling")
    after = engine.decide("mei", "health", {"symptom": "fever"})
    return [night, day, after]


def travel() -> list[memkg.Decision]:
    """A traveller who once flew China Eastern asks never to again; an agent offers MU."""
    engine, _ = _engine(datetime(2026, 5, 1, 9, tzinfo=UTC))
    _ingest(
        engine,
        "li-na",
        "travel",
        {
            "key": "airline.preferred",
            "value": "airline:MU",
            "source": "behavior",
            "confidence": 0.9,
        },
        {
            "key": "airline.avoided",
            "value": ["airline:MU"],
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": {"source_ref": "dialogue_turn_12"},
        },
    )
    return [engine.decide("li-na", "travel", {"airline": "airline:MU"})]


def commerce() -> list[memkg.Decision]:
    """A shopper said they are not buying a phone, yet browses phones."""
    engine, _ = _engine(datetime(2026, 5, 1, 9, tzinfo=UTC))
    _ingest(
        engine,
        "wang",
        "commerce",
        {
            "key": "purchase.intent",
            "value": {"category": "category:phone", "buying": False},
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": {"source_ref": "dialogue_turn_4"},
        },
        {
            "key": "category.interest",
            "value": ["category:phone"],
            "source": "behavior",
            "confidence": 0.9,
        },
    )
    return [engine.decide("wang", "commerce", {"category": "category:phone", "price": 3999})]


def finance() -> list[memkg.Decision]:
    """A conservative client is offered an aggressive fund: deny beats everything else."""
    engine, _ = _engine(datetime(2026, 5, 1, 9, tzinfo=UTC))
    _ingest(
        engine,
        "chen",
        "finance",
        {
            "key": "risk.profile",
            "value": "risk:conservative",
            "source": "profile",
            "confidence": 0.95,
            "provenance": {**CONSENT, "source_ref": "kyc:form/31"},
        },
        {
            "key": "investment.horizon_years",
            "value": 1,
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": CONSENT,
        },
    )
    context = {"product_type": "equity_fund", "product_risk": "aggressive", "amount": 150000}
    return [
        engine.decide("chen", "finance", context),
        engine.decide("chen", "finance", context, decision="risk_flags"),
    ]


SCENARIOS: dict[str, Callable[[], list[memkg.Decision]]] = {
    "health": health,
    "travel": travel,
    "commerce": commerce,
    "finance": finance,
}


def main() -> int:
    for name, scenario in SCENARIOS.items():
        print(f"\n=== {name} " + "=" * (60 - len(name)))
        for decision in scenario():
            result = decision.result
            print(
                f"\n--- {decision.request.decision}: {result.status.value} → {result.action} "
                f"({result.urgency.value if result.urgency else '-'})"
            )
            print(memkg.render_explanation(decision.explanation))
    return 0


if __name__ == "__main__":
    sys.exit(main())
