"""The score sheet: every claim of a resolution with its score, standing and reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memkg.arbitration.resolution import ClaimScore, StaleFlag, Standing
from memkg.model.fact import Fact
from memkg.model.weight import Weight

if TYPE_CHECKING:
    from memkg.arbitration.lineup import Entrant

_ORDER = {Standing.WON: 0, Standing.CONTESTED: 1, Standing.LOST: 2, Standing.PENDING: 3}


class ScoreSheet:
    """Collects one line per claim; the last line written for a claim stands."""

    def __init__(self) -> None:
        self._lines: dict[str, ClaimScore] = {}

    def line(
        self,
        entrant: Entrant,
        weight: Weight,
        standing: Standing,
        reason: str,
        by: str | None = None,
    ) -> None:
        """``entrant``'s line, weighed ``weight`` at the time resolved."""
        f = entrant.fact
        self._lines[f.id] = ClaimScore(
            fact_id=f.id,
            value=f.value,
            source=f.source,
            kind=f.kind,
            scope=f.scope,
            tier=entrant.tier,
            session_id=f.session_id,
            context=dict(f.context),
            confidence=f.confidence,
            observed_at=f.observed_at,
            status=f.status,
            change=f.change,
            score=round(weight.value, 4),
            weight=weight,
            standing=standing,
            reason=reason,
            beaten_by=by,
        )

    def lines(self) -> tuple[ClaimScore, ...]:
        """Winners first, then contested, lost and pending; strongest first within each."""
        return tuple(
            sorted(self._lines.values(), key=lambda c: (_ORDER[c.standing], -c.score, c.fact_id))
        )


def stale_flag(fact: Fact, why: str, detail: str) -> StaleFlag:
    return StaleFlag(fact_id=fact.id, source=fact.source, value=fact.value, why=why, detail=detail)
