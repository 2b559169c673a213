"""``render_profile`` called with a budget that is not a count of tokens: a clear error."""

from __future__ import annotations

import math
from typing import Any

import pytest

from memkg import FrozenClock, InvalidOperation
from memkg.lifecycle.inject import render_profile
from memkg.lifecycle.tokens import approximate_tokens


@pytest.mark.parametrize("budget", [math.nan, math.inf, 500.0, "500", None, True, -1])
def test_a_budget_must_be_a_whole_number_of_tokens(clock: FrozenClock, budget: Any) -> None:
    with pytest.raises(InvalidOperation) as caught:
        render_profile("u1", "travel", [], [], now=clock.now(), budget=budget,
                       counter=approximate_tokens, counter_name="estimate")  # fmt: skip
    assert caught.value.code == "profile.budget" and "budget" in caught.value.message
