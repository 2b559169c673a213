"""A pruned window stays bounded and pruning is linear; hostile tool traffic is handled."""

from __future__ import annotations

import json

import pytest

from memkg import Message, ToolCall, Window
from memkg.lifecycle.prune import MAX_EXCLUSION_CHARS
from support.growth import GROWTH, growth


def _chat(turns: int) -> Window:
    messages: list[Message] = []
    for i in range(turns):
        messages.append(Message.user(f"Not option {i}. I would rather not fly on day {i}."))
        messages.append(Message.assistant("ok"))
    return Window(messages=tuple(messages))


def test_pruning_every_turn_keeps_the_window_bounded() -> None:
    window, limit = Window(), 2_000
    for i in range(1_500):
        window = window.add(
            Message.user(f"Don't book flight {i} please, never on {i}"), Message.assistant("ok")
        )
        window = window.prune(keep_turns=3, max_summary_chars=limit)
        assert sum(map(len, window.summary)) <= limit
        assert sum(map(len, window.exclusions)) <= MAX_EXCLUSION_CHARS
    # the newest are kept, oldest first
    assert window.exclusions[-1] == "Don't book flight 1496 please, never on 1496"
    assert window.summary[-1] == "Don't book flight 1496 please, never on 1496"
    assert window.pruned_turns == 1_497
    framing = 40 + 16 * (len(window.summary) + len(window.exclusions))
    assert len(window.summary_text()) <= limit + MAX_EXCLUSION_CHARS + framing


def test_one_large_prune_is_bounded_and_keeps_the_newest() -> None:
    pruned = _chat(4_000).prune(keep_turns=2, max_summary_chars=500)
    assert sum(map(len, pruned.summary)) <= 500
    assert sum(map(len, pruned.exclusions)) <= MAX_EXCLUSION_CHARS
    assert pruned.exclusions[-2:] == ("Not option 3997.", "I would rather not fly on day 3997.")
    assert pruned.pruned_turns == 3_998


def test_a_repeated_ruling_out_is_kept_once_at_its_newest_place() -> None:
    window = Window()
    for text in ("No red-eyes.", "Avoid Frankfurt.", "No red-eyes.", "now"):
        window = window.add(Message.user(text), Message.assistant("ok"))
    assert window.prune(keep_turns=1).exclusions == ("Avoid Frankfurt.", "No red-eyes.")


def test_a_long_ruling_out_is_clipped_visibly() -> None:
    text = "Don't book " + "any of these hotels " * 100 + "please."
    window = Window().add(Message.user(text), Message.assistant("ok"), Message.user("now"))
    (kept,) = window.prune(keep_turns=1).exclusions
    assert kept.endswith("…") and len(kept) <= 240 and text.startswith(kept[:-1].rstrip())


def test_one_large_prune_is_linear() -> None:
    assert growth(lambda window: window.prune(keep_turns=2), _chat(500), _chat(8_000)) < GROWTH


DEEP = "[" * 100_000 + "]" * 100_000


def _note_exchange(arguments: str, result: str) -> Window:
    call = ToolCall(id="c1", name="save_memory_note", arguments=arguments)
    return Window(
        messages=(
            Message.user("hello"),
            Message.assistant(None, (call,)),
            Message.tool("c1", result),
            Message.user("next"),
        )
    )


@pytest.mark.parametrize(
    ("arguments", "result"),
    [
        (DEEP, '{"saved": true}'),
        ('{"note": "x"}', DEEP),
        ('{"note": ' + DEEP + "}", '{"saved": true}'),
        ('{"note": "x", "n": ' + "9" * 5_000 + "}", '{"saved": true}'),
        ('{"note": "x"}', '{"saved": true, "n": ' + "9" * 5_000 + "}"),
        ('["note"]', '{"saved": true}'),
        ('{"note": "x"}', '"saved"'),
    ],
)
def test_unreadable_note_calls_are_not_notes(arguments: str, result: str) -> None:
    pruned = _note_exchange(arguments, result).prune(keep_turns=1)
    assert pruned.notes == () and pruned.pruned_turns == 1


def test_a_readable_note_call_next_to_a_deep_one_is_kept() -> None:
    window = _note_exchange(DEEP, '{"saved": true}')
    good = ToolCall(id="c2", name="save_memory_note", arguments=json.dumps({"note": "Aisle"}))
    window = Window(
        messages=(
            *window.messages[:3],
            Message.assistant(None, (good,)),
            Message.tool("c2", '{"saved": true}'),
            window.messages[3],
        )
    )
    assert window.prune(keep_turns=1).notes == ("Aisle",)
