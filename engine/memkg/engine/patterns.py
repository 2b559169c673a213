"""Pattern facts, wired: what the user's behaviour shows ("usually shops 20:00-22:00"),
written as ``pattern`` facts through the ordinary write path."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from memkg.arbitration import hour_patterns, is_hours_key
from memkg.arbitration.support import canon
from memkg.clock import Clock
from memkg.engine.facts import IngestResult
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_args
from memkg.model.fact import Observation, Source


@dataclass(eq=False, repr=False)
class PatternWriter:
    """Derives and writes pattern facts; see ``memkg.Engine``."""

    setup: Setup
    projections: Projections
    ingest: Callable[[Mapping[str, Any] | Observation], IngestResult]
    clock: Clock

    def derive_patterns(self, user_id: str, domain: str, *, tz: str = "UTC") -> list[IngestResult]:
        """Write ``pattern`` facts the user's behaviour shows ("usually shops 20:00-22:00")."""
        check_args(user_id=user_id, domain=domain, tz=tz)
        zone = ZoneInfo(tz)
        facts = list(self.projections.memory(user_id).facts.values())
        written = []
        for key in self.setup.registry.keys(domain):
            spec = self.setup.registry.spec(domain, key)
            if spec is None or not is_hours_key(spec):
                continue
            for obs in hour_patterns(facts, spec, user_id=user_id, tz=zone, now=self.clock.now()):
                held = [f for f in self.projections.memory(user_id).live_claims(domain, key)
                        if f.source is Source.SYSTEM and f.context == obs.context]  # fmt: skip
                if not any(canon(f.value) == canon(obs.value) for f in held):
                    written.append(self.ingest(obs))
        return written
