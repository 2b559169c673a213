"""The conflict strength is compared with the bands as computed, not as rounded for the
record; the recorded strength falls on the same side of every band edge as the outcome."""

from __future__ import annotations

import pytest

from memkg.arbitration import Outcome
from memkg.arbitration.policy import Bands
from memkg.engine import Engine

from .conftest import Ingest

HEALTH = Bands(silent_below=0.1, freeze_above=0.4)
"""``rules/policy.yaml``'s health bands."""
CONSENT = {"consent_granted": True, "consent_version": "v1"}


def _outcome(strength: float, bands: Bands) -> Outcome:
    if strength < bands.silent_below:
        return Outcome.ADOPTED
    return Outcome.PROVISIONAL if strength <= bands.freeze_above else Outcome.FROZEN


@pytest.mark.parametrize(
    ("confidence", "expected"),
    [
        (0.4705, Outcome.PROVISIONAL),  # support 0.399925
        (0.4706, Outcome.FROZEN),  # 0.40001: above 0.4 though it rounds to 0.4
        (0.47064, Outcome.FROZEN),  # 0.400044
        (0.48, Outcome.FROZEN),
        (0.11764, Outcome.ADOPTED),  # 0.099994: below 0.1 though it rounds to 0.1
        (0.1176471, Outcome.PROVISIONAL),  # 0.100000035
    ],
)
def test_a_strength_past_a_band_edge_by_less_than_the_rounding_counts(
    engine: Engine, ingest: Ingest, confidence: float, expected: Outcome
) -> None:
    for value, source, conf in (([], "profile", 1.0),
                                (["allergen:penicillin"], "third_party", confidence)):  # fmt: skip
        made = ingest("medical.allergies", value, source, conf, domain="health",
                      provenance=CONSENT)  # fmt: skip
        if made.status.value == "pending_confirmation":
            engine.confirm("u1", made.fact_id)
    found = engine.resolve("u1", "health", "medical.allergies")
    assert found.outcome is expected
    assert _outcome(found.strength, HEALTH) is expected  # the record agrees with itself
    assert abs(found.strength - confidence * 0.85) < 1e-4
    assert str(found.strength) in found.reason
    assert (engine.review_queue() != []) is (expected is Outcome.FROZEN)
