"""Observation builders for tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
"""The frozen clock's start in tests."""

CONSENTED: dict[str, Any] = {"provenance": {"consent_granted": True, "consent_version": "v1"}}


def obs(**fields: Any) -> dict[str, Any]:
    """A valid travel observation, with ``fields`` replacing its defaults."""
    base: dict[str, Any] = {
        "user_id": "u1",
        "domain": "travel",
        "key": "airline.preferred",
        "value": "airline:MU",
        "source": "dialogue",
        "confidence": 0.9,
    }
    return {**base, **fields}
