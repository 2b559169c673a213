"""Pattern facts, wired: what the user's behaviour shows ("usually shops 20:00-22:00"),
written as ``pattern`` facts through the ordinary write path."""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

from memkg.arbitration import hour_patterns, is_hours_key
from memkg.arbitration.support import canon
from memkg.clock import Clock
from memkg.engine.facts import FactWriter, IngestResult
from memkg.engine.projections import Projections
from memkg.engine.setup import Setup, check_args
from memkg.events.retry import retry_conflicts
from memkg.model.fact import Source


@dataclass(eq=False, repr=False)
class PatternWriter:
    """Derives and writes pattern facts; see ``memkg.Engine``."""

    setup: Setup
    projections: Projections
    writer: FactWriter
    clock: Clock

    def derive_patterns(self, user_id: str, domain: str, *, tz: str = "UTC") -> list[IngestResult]:
        """Write ``pattern`` facts the user's behaviour shows ("usually shops 20:00-22:00").

        Each is written at the stream version the behaviour was read at: a write in between
        (another process's; an erasure, after which the pattern would restore what was
        erased) makes the derivation start again from the memory as it now is."""
        check_args(user_id=user_id, domain=domain, tz=tz)
        zone = ZoneInfo(tz)
        return retry_conflicts(lambda: self._derive(user_id, domain, zone),
                               retries=self.writer.config.write_retries,
                               counts=self.writer.conflicts)  # fmt: skip

    def _derive(self, user_id: str, domain: str, zone: ZoneInfo) -> list[IngestResult]:
        memory, lock = self.projections.memory(user_id), self.writer.journal.lock
        with lock:  # a resident memory is kept as a write folds events
            facts, version = list(memory.facts.values()), memory.version
        written = []
        for key in self.setup.registry.keys(domain):
            spec = self.setup.registry.spec(domain, key)
            if spec is None or not is_hours_key(spec):
                continue
            for obs in hour_patterns(facts, spec, user_id=user_id, tz=zone, now=self.clock.now()):
                with lock:
                    held = [f for f in memory.live_claims(domain, key)
                            if f.source is Source.SYSTEM and f.context == obs.context]  # fmt: skip
                if not any(canon(f.value) == canon(obs.value) for f in held):
                    made = self.writer.ingest(obs, expected_version=version)
                    written.append(made)
                    assert made.version is not None  # a write says the version it left
                    version = made.version
        return written
