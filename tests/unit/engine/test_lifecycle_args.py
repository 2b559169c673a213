"""Counts given to the lifecycle calls: 0 is a count like any other, never the default."""

from __future__ import annotations

import pytest

from memkg import Engine, InvalidOperation, Window


def _chat(turns: int) -> Window:
    messages = []
    for i in range(turns):
        messages += [{"role": "user", "content": f"question {i}"},
                     {"role": "assistant", "content": f"answer {i}"}]  # fmt: skip
    return Window(messages=messages)


@pytest.mark.parametrize("keep", [0, -1, "2", 1.0, True])
def test_prune_refuses_a_count_that_is_not_a_whole_positive_number(
    engine: Engine, keep: object
) -> None:
    """0 was taken for "not given" and kept the configured eight turns."""
    with pytest.raises(InvalidOperation) as caught:
        engine.prune(_chat(10), keep)  # type: ignore[arg-type]
    assert caught.value.code == "window.keep"


def test_prune_keeps_the_configured_turns_when_none_is_given(engine: Engine) -> None:
    kept = engine.prune(_chat(20)).messages
    users = [m for m in kept if m.role == "user"]
    assert len(users) == engine.config.lifecycle.window_turns


@pytest.mark.parametrize(
    "where",
    [{"source_ref": "r\x00"}, {"tool_outputs": ["\ud800"]}, {"source_ref": "r\ud800"}],
)
def test_a_note_call_refuses_text_no_store_keeps_in_its_where(
    engine: Engine, where: dict[str, object]
) -> None:
    """A NUL in ``source_ref`` was stored (PostgreSQL would fail the write on it)."""
    with pytest.raises(InvalidOperation) as caught:
        engine.save_memory_note("u1", "travel", "Prefers aisle seats", session_id="s1", **where)
    assert caught.value.code in ("text.nul", "text.invalid_unicode")
    assert engine.notes("u1") == []
