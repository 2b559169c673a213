"""A claim that lost a tie says which tie-break decided, never that an equal support is below
the winner's."""

from __future__ import annotations

from memkg.arbitration import Standing
from memkg.arbitration.support import Ranked, lost_reason
from memkg.engine import Engine

from .conftest import Ingest

CONSENT = {"consent_granted": True, "consent_version": "v1"}
WINNER = Ranked('"a"', "a", 0.9, ("f1",), 0.9, 200.0)


def _ranked(support: float, best: float, newest: float) -> Ranked:
    return Ranked('"b"', "b", support, ("f2",), best, newest)


def test_an_equal_support_and_time_is_broken_by_the_values_order(
    engine: Engine, ingest: Ingest
) -> None:
    # 0.5 x dialogue 0.7 == 0.35 x system 1.0, observed at the same instant
    for value, source, confidence in (([], "dialogue", 0.5),
                                      (["allergen:penicillin"], "system", 0.35)):  # fmt: skip
        made = ingest("medical.allergies", value, source, confidence, domain="health",
                      provenance=CONSENT)  # fmt: skip
        if made.status.value == "pending_confirmation":
            engine.confirm("u1", made.fact_id)
    held = engine.resolve("u1", "health", "medical.allergies")
    [reason] = [c.reason for c in held.claims if c.standing is Standing.LOST]
    assert "below" not in reason
    assert "ties the winner's 0.3500" in reason
    assert "the values' fixed order breaks the tie" in reason


def test_an_equal_support_is_broken_by_the_strongest_claim() -> None:
    reason = lost_reason(_ranked(0.9, 0.45, 300.0), WINNER)
    assert reason == ("its value's support ties the winner's 0.9000; the winner's strongest "
                      "claim (0.9000) outweighs its own (0.4500)")  # fmt: skip


def test_equal_support_and_claims_are_broken_by_the_newest() -> None:
    reason = lost_reason(_ranked(0.9, 0.9, 100.0), WINNER)
    assert "ties the winner's 0.9000" in reason and "newest claim is newer" in reason


def test_a_support_below_the_winners_by_less_than_the_display_shows_the_difference() -> None:
    reason = lost_reason(_ranked(0.899999, 0.899999, 300.0), WINNER)
    assert reason == "its value's support 0.899999 is below the winner's 0.900000"
    # a difference ranking does not see (under 1e-9) is a tie
    assert "ties" in lost_reason(_ranked(0.9 - 1e-12, 0.9, 100.0), WINNER)
