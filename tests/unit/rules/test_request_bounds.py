"""A decision request whose context holds an integer beyond 64 bits is refused, not crashed on."""

from __future__ import annotations

from memkg import DecisionStatus, Engine
from memkg.rules.validation import bounded_context


def test_an_integer_beyond_64_bits_is_bounded_like_any_value() -> None:
    bounded = bounded_context({"airline": 10**400, "long": 10**3000, "small": 7})
    assert bounded["small"] == 7 and bounded["airline"] == 10**400  # 401 bytes of JSON
    assert bounded["long"]["bytes"] == 3001  # too long to log: its size and digest


def test_decide_refuses_a_context_integer_beyond_64_bits(engine: Engine) -> None:
    decision = engine.decide("u1", "travel", {"airline": 10**400})
    assert decision.result.status is DecisionStatus.INVALID_INPUT
    assert engine.replay(decision.decision_id).reproduced
