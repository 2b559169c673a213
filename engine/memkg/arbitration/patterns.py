"""Patterns derived from behaviour: what the user usually does, as facts the system writes.

The derived observations go through the normal validated ingest path with ``source: system``
and ``kind: pattern``; a key that declares ``day_type`` among its context fields gets one
pattern for weekdays and one for weekends.

>>> from datetime import UTC, datetime
>>> times = [datetime(2026, 5, d, 20, 30, tzinfo=UTC) for d in range(1, 7)]
>>> usual_hours(times, tz=UTC).value
{'from': '20:00', 'to': '22:00'}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from memkg.model.fact import Fact, FactStatus, Kind, Observation, Provenance, Source
from memkg.model.keyspec import KeySpec


@dataclass(frozen=True)
class HoursPattern:
    """A window of ``width`` hours starting at ``start`` that holds ``share`` of the events."""

    start: int
    width: int
    share: float
    events: int
    context: dict[str, str] = field(default_factory=dict)

    @property
    def value(self) -> dict[str, str]:
        return {"from": f"{self.start:02d}:00", "to": f"{(self.start + self.width) % 24:02d}:00"}


def usual_hours(
    times: Sequence[datetime],
    *,
    tz: tzinfo,
    width: int = 2,
    min_events: int = 5,
    min_share: float = 0.6,
) -> HoursPattern | None:
    """The ``width``-hour window holding most events, if it holds at least ``min_share``."""
    if len(times) < min_events:
        return None
    counts = [0] * 24
    for at in times:
        counts[at.astimezone(tz).hour] += 1
    totals = [sum(counts[(start + i) % 24] for i in range(width)) for start in range(24)]
    # among equally full windows, the one that starts at a busy hour, then the earliest
    start = max(range(24), key=lambda h: (totals[h], counts[h], -h))
    share = totals[start] / len(times)
    if share < min_share:
        return None
    return HoursPattern(start=start, width=width, share=share, events=len(times))


def is_hours_key(spec: KeySpec) -> bool:
    """A ``pattern`` key whose value is an hour window ``{from, to}``."""
    props = spec.schema.get("properties") or {}
    return spec.kind is Kind.PATTERN and set(props) == {"from", "to"}


def hour_patterns(
    facts: Sequence[Fact], spec: KeySpec, *, user_id: str, tz: tzinfo, now: datetime
) -> list[Observation]:
    """Observations of the usual hours of the user's behaviour in the key's domain."""
    times = [
        f.observed_at
        for f in facts
        if f.source is Source.BEHAVIOR
        and f.domain == spec.domain
        and f.status is not FactStatus.RETRACTED
    ]
    groups: dict[str, list[datetime]] = {"": times}
    if "day_type" in spec.context:
        groups = {"weekday": [], "weekend": []}
        for at in times:
            groups["weekend" if at.astimezone(tz).weekday() >= 5 else "weekday"].append(at)
    found = []
    for day_type, group in sorted(groups.items()):
        pattern = usual_hours(group, tz=tz)
        if pattern is None:
            continue
        found.append(
            Observation(
                user_id=user_id,
                domain=spec.domain,
                key=spec.key,
                value=pattern.value,
                kind=Kind.PATTERN,
                source=Source.SYSTEM,
                confidence=round(pattern.share, 2),
                observed_at=now,
                context={"day_type": day_type} if day_type else {},
                provenance=Provenance(
                    source_ref=f"pattern:{pattern.events} behaviour events",
                    purpose="derived from behaviour",
                ),
            )
        )
    return found
