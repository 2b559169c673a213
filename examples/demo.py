"""The main job on the embedded default: observations in, validated memory out.

Run with ``make demo``. Uses a fresh SQLite file in a temporary folder and a frozen clock, so
the output is the same on every machine, with no network and no API key.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memkg import Engine, FrozenClock, ValidationFailed

CONSENT = {"consent_granted": True, "consent_version": "2026-01", "purpose": "care"}

OBSERVATIONS: list[tuple[str, dict[str, Any]]] = [
    (
        "profile record: home city Beijing",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "location.city",
            "value": "city:beijing",
            "source": "profile",
            "confidence": 0.95,
            "provenance": {"source_ref": "crm:record/881"},
        },
    ),
    (
        "dialogue: prefers China Eastern",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "airline.preferred",
            "value": "airline:MU",
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": {"source_ref": "dialogue_turn_3"},
        },
    ),
    (
        "dialogue: actually Air China now",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "airline.preferred",
            "value": "airline:CA",
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": {"source_ref": "dialogue_turn_9"},
        },
    ),
    (
        "dialogue: I moved to Shanghai",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "location.city",
            "value": "city:shanghai",
            "source": "dialogue",
            "confidence": 0.9,
            "change": True,
            "provenance": {"source_ref": "dialogue_turn_12"},
        },
    ),
    (
        "dialogue: travelling with two people this week",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "travel.companions",
            "value": 2,
            "source": "dialogue",
            "confidence": 0.8,
        },
    ),
    (
        "health: child is 3 (needs confirmation)",
        {
            "user_id": "li-na",
            "domain": "health",
            "key": "child.age",
            "value": 3,
            "source": "dialogue",
            "confidence": 0.9,
            "provenance": CONSENT,
        },
    ),
    (
        "health: halal diet, with consent",
        {
            "user_id": "li-na",
            "domain": "health",
            "key": "diet.restrictions",
            "value": ["halal"],
            "source": "dialogue",
            "confidence": 0.8,
            "provenance": CONSENT,
        },
    ),
    (
        "REFUSED: a seat that does not exist",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "seat.preference",
            "value": "sideways",
            "source": "dialogue",
        },
    ),
    (
        "REFUSED: an ID number in free text",
        {
            "user_id": "li-na",
            "domain": "health",
            "key": "medication.current",
            "value": ["salbutamol, ID 11010519491231002X"],
            "source": "dialogue",
            "provenance": CONSENT,
        },
    ),
    (
        "REFUSED: diet without consent, confidence 1.5",
        {
            "user_id": "li-na",
            "domain": "health",
            "key": "diet.restrictions",
            "value": ["vegan"],
            "source": "dialogue",
            "confidence": 1.5,
        },
    ),
    (
        "REFUSED: an airline nobody knows",
        {
            "user_id": "li-na",
            "domain": "travel",
            "key": "airline.preferred",
            "value": "airline:ZZ",
            "source": "dialogue",
        },
    ),
]


def show_memory(engine: Engine, user: str, title: str) -> None:
    print(f"\n== {title}")
    for fact in engine.facts(user):
        until = f" until {fact.valid_until:%Y-%m-%d %H:%M}" if fact.valid_until else ""
        print(
            f"  {fact.domain:<9} {fact.key:<20} {json.dumps(fact.value, ensure_ascii=False):<16}"
            f" {fact.kind.value:<10} {fact.source.value:<9} {fact.status.value}{until}"
        )


def main(folder: Path) -> int:
    clock = FrozenClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))
    with Engine.open(folder / "memkg.db", clock=clock) as engine:
        print("== ingest")
        for title, observation in OBSERVATIONS:
            try:
                result = engine.ingest(observation)
            except ValidationFailed as refused:
                print(f"  refused   {title}")
                for problem in refused.report.problems:
                    print(f"            {problem.code} at {problem.path}: {problem.message}")
                continue
            replaced = f", supersedes {len(result.superseded)}" if result.superseded else ""
            print(f"  accepted  {title} -> {result.status.value}{replaced}")
            clock.advance(timedelta(minutes=5))

        show_memory(engine, "li-na", "current memory")
        print("\n== history of location.city")
        for fact in engine.history("li-na", "location.city"):
            print(
                f"  {fact.value:<14} {fact.source.value:<9} {fact.status.value}"
                f"{' (' + fact.status_reason + ')' if fact.status_reason else ''}"
            )

        pending = [f for f in engine.facts("li-na") if f.status.value == "pending_confirmation"]
        for fact in pending:
            engine.confirm("li-na", fact.id)
        print(f"\n== the user confirmed {len(pending)} pending fact(s); 3 days pass")
        clock.advance(timedelta(days=3))
        swept = engine.expire_due("li-na")
        show_memory(engine, "li-na", f"memory after the expiry sweep ({len(swept)} state expired)")

        receipt = engine.erase("li-na")
        print(f"\n== erase li-na: removed {receipt.removed}, digest {receipt.digest[:16]}...")
        print(f"   facts left: {len(engine.facts('li-na'))}")
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="memkg-demo-") as tmp:
        sys.exit(main(Path(tmp)))
