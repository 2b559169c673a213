"""``Window.prune`` called directly with counts that are not counts: a clear error, the window
as it was."""

from __future__ import annotations

from typing import Any

import pytest

from memkg import InvalidOperation, Message, Window


def _window() -> Window:
    return Window(messages=[Message.user("Not the red-eye."), Message.assistant("OK"),
                            Message.user("Aisle."), Message.assistant("OK"),
                            Message.user("Thanks.")])  # fmt: skip


@pytest.mark.parametrize("keep", [1.5, float("nan"), float("inf"), "2", None, True, 0, -1])
def test_keep_turns_must_be_a_whole_number_from_one(keep: Any) -> None:
    window = _window()
    with pytest.raises(InvalidOperation) as caught:
        window.prune(keep)
    assert caught.value.code == "window.keep" and "keep_turns" in caught.value.message
    assert len(window.messages) == 5


@pytest.mark.parametrize("chars", [float("nan"), 2.5, "200", None, False, -1])
def test_max_summary_chars_must_be_a_whole_number(chars: Any) -> None:
    with pytest.raises(InvalidOperation) as caught:
        _window().prune(1, max_summary_chars=chars)
    assert caught.value.code == "window.summary" and "max_summary_chars" in caught.value.message


def test_a_summary_budget_of_zero_still_keeps_the_newest_line() -> None:
    pruned = _window().prune(1, max_summary_chars=0)
    assert pruned.summary == ("Aisle.",) and pruned.exclusions == ("Not the red-eye.",)
