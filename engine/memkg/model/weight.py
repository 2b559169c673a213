"""Edge weights (DESIGN section 4): computed from evidence, never hand-set, always explained.

For one claim (a fact asserting ``user ─key→ value``) at time ``now``::

    base    = confidence × credibility[source] × (1 − monthly_decay) ^ (age_days / 30)
    context = base × (1 + Σ score[signal] × signal_decay ^ signal_age_days)
    weight  = clamp(context × rejection_factor ^ rejections, 0, 1)

Signals are the user's interactions with that edge (mentioned again, corrected, ignored a
suggestion based on it) within ``signal_window_days``; each rejection ("not China Eastern
again") halves the weight. Decisions use an edge only at or above ``threshold``.

>>> from datetime import datetime, UTC
>>> now = datetime(2026, 5, 1, tzinfo=UTC)
>>> w = claim_weight(0.9, "dialogue", now, [], now, WeightParams())
>>> round(w.value, 3), w.usable
(0.63, True)
>>> rejected = [Signal(SignalKind.REJECTED, now, "evt_1")]
>>> w = claim_weight(0.9, "dialogue", now, rejected, now, WeightParams())
>>> round(w.value, 3), w.usable
(0.315, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memkg.errors import ConfigError
from memkg.model.source import Source


class SignalKind(StrEnum):
    """How the user interacted with an edge (the ``kind`` of a ``signal.recorded`` payload)."""

    MENTION = "mention"
    CORRECTION = "correction"
    IGNORED = "ignored"
    REJECTED = "rejected"


SIGNAL_KINDS = tuple(k.value for k in SignalKind)


class WeightParams(BaseModel):
    """Every number of the weight formula; configuration, not code."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    credibility: dict[Source, float] = Field(
        default_factory=lambda: {
            Source.DIALOGUE: 0.7,
            Source.BEHAVIOR: 0.9,
            Source.PROFILE: 0.95,
            Source.THIRD_PARTY: 0.85,
            Source.SYSTEM: 1.0,
            Source.RULE: 1.0,
        }
    )
    """Per source, every built-in one (a source without one would silently weigh nothing);
    sources a root declares bring theirs (``rules/policy.yaml``, ``sources``)."""
    monthly_decay: float = Field(0.05, ge=0, lt=1)
    signal_scores: dict[SignalKind, float] = Field(
        default_factory=lambda: {
            SignalKind.MENTION: 0.8,
            SignalKind.CORRECTION: 0.5,
            SignalKind.IGNORED: -0.3,
        }
    )
    signal_decay: float = Field(0.9, gt=0, le=1)
    """Per day of a signal's age."""
    signal_window_days: float = Field(30.0, gt=0)
    rejection_factor: float = Field(0.5, ge=0, le=1)
    threshold: float = Field(0.6, ge=0, le=1)
    knowledge_weight: float = Field(1.0, ge=0, le=1)
    """Weight of a domain-knowledge edge that states none (``mk:hub``, ``mk:locatedIn``)."""

    @field_validator("credibility")
    @classmethod
    def _every_source(cls, value: dict[Source, float]) -> dict[Source, float]:
        missing = [s.value for s in Source.BUILTIN if s not in value]
        if missing:
            raise ValueError(
                f"credibility gives no weight for source {', '.join(missing)}: "
                "give every source one (0..1)"
            )
        extra = [s for s in value if not Source(s).builtin]
        if extra:
            raise ValueError(
                f"credibility names {', '.join(extra)}, not a built-in source: a new source is "
                "declared in a root's rules/policy.yaml under sources, with its credibility"
            )
        wrong = [s.value for s, v in value.items() if not 0 <= v <= 1]
        if wrong:
            raise ValueError(f"credibility of {', '.join(wrong)} is outside 0..1")
        return value


@dataclass(frozen=True)
class Signal:
    """One interaction with an edge, as recorded in the log."""

    kind: SignalKind
    at: datetime
    event_id: str


class Factor(BaseModel):
    """One step of a weight's computation, and the evidence that caused it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: float
    detail: str
    event_id: str | None = None


class Weight(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float
    usable: bool
    """At or above the threshold: decisions may use the edge."""
    base: float
    factors: tuple[Factor, ...]


def claim_weight(
    confidence: float,
    source: str,
    observed_at: datetime,
    signals: Sequence[Signal],
    now: datetime,
    params: WeightParams,
) -> Weight:
    credibility = credibility_of(params, source)
    age_days = max((now - observed_at).total_seconds() / 86400, 0.0)
    aging = (1 - params.monthly_decay) ** (age_days / 30)
    base = confidence * credibility * aging
    factors = [
        _fixed("confidence", confidence, "as given by the source"),
        _fixed("credibility", credibility, f"source {source}"),
        Factor(name="time_decay", value=aging, detail=f"{age_days:.1f} days since observed"),
    ]
    gain = 0.0
    rejections = 0
    for signal in sorted(signals, key=_signal_order):
        signal_age = (now - signal.at).total_seconds() / 86400
        if signal_age < 0:
            continue  # a signal from after ``now`` (weights as of a past time)
        if signal.kind == SignalKind.REJECTED:
            rejections += 1
            rejected = "user rejected what this edge led to"
            factors.append(_fixed("rejection", params.rejection_factor, rejected, signal.event_id))
            continue
        if signal_age > params.signal_window_days:
            continue
        contribution = params.signal_scores.get(signal.kind, 0.0) * params.signal_decay**signal_age
        gain += contribution
        factors.append(
            Factor(
                name=signal.kind,
                value=contribution,
                detail=f"{signal_age:.1f} days ago",
                event_id=signal.event_id,
            )
        )
    raw = base * (1 + gain) * params.rejection_factor**rejections
    value = min(max(raw, 0.0), 1.0)
    if value != raw:
        factors.append(Factor(name="clamp", value=value, detail=f"{raw:.3f} clamped to [0, 1]"))
    return Weight(value=value, usable=value >= params.threshold, base=base, factors=tuple(factors))


def credibility_of(params: WeightParams, source: str) -> float:
    """The credibility of ``source``; a source no root declares (any more) is an error, never
    a silent weight of 0."""
    found = params.credibility.get(source)  # type: ignore[call-overload]
    if found is None:
        raise ConfigError(
            f"source {source!r} has no credibility: no root in force declares it (a stored "
            f"claim may name a source whose declaration was removed); the sources with one are "
            f"{', '.join(sorted(params.credibility))}. Declare it again in a root's "
            "rules/policy.yaml under sources, with its credibility",
            code="source.undeclared",
        )
    return float(found)


def _signal_order(signal: Signal) -> tuple[datetime, str]:
    return signal.at, signal.event_id


def _fixed(name: str, value: float, detail: str, event_id: str | None = None) -> Factor:
    """A factor that does not move with time: a frozen value, built once and shared."""
    if value == 0:  # 0.0 and -0.0 are one key but two values
        return _factor(name, value, detail, event_id)
    return _shared_factor(name, value, detail, event_id)


def _factor(name: str, value: float, detail: str, event_id: str | None) -> Factor:
    if event_id is None:  # left unset, as the other factors leave it
        return Factor(name=name, value=value, detail=detail)
    return Factor(name=name, value=value, detail=detail, event_id=event_id)


_shared_factor = lru_cache(maxsize=8192)(_factor)


class ClaimWeight:
    """The weight of one claim at one time: the value at once, its ``Weight`` on request.

    Views weigh every claim on every read and most reads never look at a breakdown, so the
    value is computed here without building one. It is the same float, bit for bit, as
    ``claim_weight(...).value``: the same operations in the same order (a test checks it).

    >>> from datetime import datetime, UTC
    >>> now = datetime(2026, 5, 1, tzinfo=UTC)
    >>> rejected = (Signal(SignalKind.REJECTED, now, "evt_1"),)
    >>> w = ClaimWeight(0.9, "dialogue", now, rejected, now, WeightParams())
    >>> round(w.value, 3), w.usable
    (0.315, False)
    >>> w.breakdown == claim_weight(0.9, "dialogue", now, rejected, now, WeightParams())
    True
    """

    __slots__ = ("_inputs", "_weight", "usable", "value")

    def __init__(
        self,
        confidence: float,
        source: str,
        observed_at: datetime,
        signals: Sequence[Signal],
        now: datetime,
        params: WeightParams,
    ) -> None:
        self._inputs = (confidence, source, observed_at, signals, now, params)
        self._weight: Weight | None = None
        # min/max spelled out: the same comparisons, without the calls
        age_days = (now - observed_at).total_seconds() / 86400
        age_days = 0.0 if age_days < 0.0 else age_days
        try:
            credibility = params.credibility[source]  # type: ignore[index]
        except KeyError:
            credibility = credibility_of(params, source)
        raw = confidence * credibility * (
            (1 - params.monthly_decay) ** (age_days / 30))  # fmt: skip
        if signals:
            gain = 0.0
            rejections = 0
            for signal in sorted(signals, key=_signal_order):
                signal_age = (now - signal.at).total_seconds() / 86400
                if signal_age < 0:
                    continue
                if signal.kind == SignalKind.REJECTED:
                    rejections += 1
                elif signal_age <= params.signal_window_days:
                    gain += (params.signal_scores.get(signal.kind, 0.0)
                             * params.signal_decay**signal_age)  # fmt: skip
            raw = raw * (1 + gain) * params.rejection_factor**rejections
        # without signals the formula multiplies by (1 + 0.0) × factor ** 0, exactly 1.0
        value = 0.0 if raw < 0.0 else raw
        self.value = value = 1.0 if value > 1.0 else value
        self.usable = value >= params.threshold

    @property
    def breakdown(self) -> Weight:
        """The weight with every factor and the evidence behind it (built once, on request)."""
        if self._weight is None:
            self._weight = claim_weight(*self._inputs)
        return self._weight

    def shares_inputs(self, other: ClaimWeight) -> bool:
        """Whether ``other`` weighs the same claim at the same time with the same signals and
        parameters (the edges of one list value, say), so that its breakdown is this one's."""
        mine, theirs = self._inputs, other._inputs
        return (
            mine[5] is theirs[5]
            and repr(mine[0]) == repr(theirs[0])  # 0.0 and -0.0 are equal, but weigh apart
            and mine[1:3] == theirs[1:3]
            and mine[4] == theirs[4]
            and tuple(mine[3]) == tuple(theirs[3])
        )
