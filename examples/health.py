"""Health: from a remembered condition to the protocol it requires, with the weight of each hop.

A parent tells the agent their child has asthma (health data: stored only with consent). A
``fact`` from dialogue waits for the user's confirmation: the path user → ``condition:asthma``
→ ``protocol:immediate_hospital_visit`` is shown at once, marked not decidable, and becomes
decidable once the parent confirms. Run: ``python examples/health.py``.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

try:
    import memkg
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
    import memkg

USER, DOMAIN, PROTOCOL = "parent_1", "health", "protocol:immediate_hospital_visit"


def run() -> tuple[list[memkg.GraphPath], list[memkg.GraphPath]]:
    """The paths before and after the parent confirms the condition."""
    engine = memkg.Engine(clock=memkg.FrozenClock(datetime(2026, 5, 1, 21, tzinfo=UTC)))
    stored = engine.ingest({
        "user_id": USER, "domain": DOMAIN, "key": "medical.conditions",
        "value": ["condition:asthma"], "source": "dialogue", "confidence": 0.9,
        "provenance": {"source_ref": "dialogue_turn_2", "consent_granted": True,
                       "consent_version": "health-2026-01", "purpose": "care guidance"},
    })  # fmt: skip
    before = engine.paths(USER, PROTOCOL, domain=DOMAIN)
    engine.confirm(USER, stored.fact_id)
    return before, engine.paths(USER, PROTOCOL, domain=DOMAIN)


def show(title: str, found: list[memkg.GraphPath]) -> None:
    print(title)
    for path in found:
        print(f"  path weight {path.weight:.3f}, decidable: {path.decidable}")
        for hop in path.hops:
            status = f", fact {hop.status}" if hop.status else ""
            print(f"    {hop.source} ─{hop.relation}→ {hop.target}: {hop.weight:.3f}{status}")


def main() -> None:
    before, after = run()
    show("Before the parent confirms (pending_confirmation: decisions must not use it):", before)
    show("After the parent confirms:", after)


if __name__ == "__main__":
    main()
