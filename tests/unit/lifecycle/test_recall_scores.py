"""Recall with a semantic index that answers scores outside [0, 1]: every score stays a number
in range, and the ranking stays a ranking."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pytest

from memkg import FrozenClock, Note, RecallWeights, Scope
from memkg.lifecycle.recall import recall


class _Answers:
    """A semantic index that answers the given scores."""

    name = "fixed"

    def __init__(self, scores: Mapping[str, float]) -> None:
        self._scores = scores

    def scores(
        self, user_id: str, query: str, documents: Sequence[tuple[str, str]],
        *, seen: int | None = None,
    ) -> Mapping[str, float]:  # fmt: skip
        return self._scores


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 7.0, -3.0])
def test_a_score_out_of_range_counts_as_its_nearest_bound_and_nan_as_none(
    clock: FrozenClock, bad: float
) -> None:
    now = clock.now()
    texts = ["Prefers quiet hotels", "Prefers aisle seats"]
    notes = [
        Note(id=f"note_{i}", user_id="u1", domain="travel", text=text, scope=Scope.GLOBAL,
             observed_at=now, recorded_at=now)
        for i, text in enumerate(texts)
    ]  # fmt: skip
    result = recall(
        "quiet hotel", [], notes, k=2, now=now, weights=RecallWeights(), index=None,
        credibility=lambda domain, source: 0.7,
        semantic=_Answers({"note_0": bad, "note_1": 0.5}),
    )  # fmt: skip
    scores = {c.ref: c.scores for c in result.candidates}
    for found in scores.values():
        assert all(math.isfinite(v) for v in found.model_dump().values())
    expected = 0.0 if math.isnan(bad) else min(max(bad, 0.0), 1.0)
    assert scores["note_0"].semantic == expected
    totals = [c.scores.total for c in result.candidates]
    assert totals == sorted(totals, reverse=True)
