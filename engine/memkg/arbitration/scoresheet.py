"""The score sheet: every claim of a resolution with its score, standing and reason."""

from __future__ import annotations

from memkg.arbitration.claims import Claim
from memkg.arbitration.resolution import ClaimScore, StaleFlag, Standing

_ORDER = {Standing.WON: 0, Standing.CONTESTED: 1, Standing.LOST: 2, Standing.PENDING: 3}


class ScoreSheet:
    """Collects one line per claim; the last line written for a claim stands."""

    def __init__(self) -> None:
        self._lines: dict[str, ClaimScore] = {}

    def put(self, claim: Claim, standing: Standing, reason: str, by: str | None = None) -> None:
        f = claim.fact
        self._lines[f.id] = ClaimScore(
            fact_id=f.id,
            value=f.value,
            source=f.source,
            kind=f.kind,
            scope=f.scope,
            tier=claim.tier,
            session_id=f.session_id,
            context=dict(f.context),
            confidence=f.confidence,
            observed_at=f.observed_at,
            status=f.status,
            change=f.change,
            score=round(claim.score, 4),
            weight=claim.weight,
            standing=standing,
            reason=reason,
            beaten_by=by,
        )

    def with_standing(self, standing: Standing) -> list[ClaimScore]:
        return [line for line in self._lines.values() if line.standing is standing]

    def lines(self) -> tuple[ClaimScore, ...]:
        """Winners first, then contested, lost and pending; strongest first within each."""
        return tuple(
            sorted(self._lines.values(), key=lambda c: (_ORDER[c.standing], -c.score, c.fact_id))
        )


def stale_flag(claim: Claim, why: str, detail: str) -> StaleFlag:
    f = claim.fact
    return StaleFlag(fact_id=f.id, source=f.source, value=f.value, why=why, detail=detail)
