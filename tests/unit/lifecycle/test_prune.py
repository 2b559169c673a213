"""Prune: last N turns plus a summary; notes and exclusions survive; memory is re-injected."""

from __future__ import annotations

import json

import pytest

from memkg import (
    Engine,
    EngineConfig,
    FrozenClock,
    InvalidOperation,
    LifecycleConfig,
    Message,
    ToolCall,
    Window,
)
from memkg.lifecycle.prune import MEMORY_MARK

USER, DOMAIN, SESSION = "u1", "travel", "s1"


def _note_turn(window: Window, text: str, note: str, saved: bool, n: int) -> Window:
    call = ToolCall(
        id=f"call_{n}",
        name="save_memory_note",
        arguments=json.dumps({"note": note, "scope": "session"}),
    )
    result = {"saved": saved} if saved else {"saved": False, "reason": "not saved: a guess"}
    return window.add(
        Message.user(text),
        Message.assistant(None, [call]),
        Message.tool(call.id, json.dumps(result)),
        Message.assistant("Noted."),
    )


def _conversation() -> Window:
    window = Window().inject("memory v1")
    window = _note_turn(window, "I prefer aisle seats.", "Prefers aisle seats", True, 1)
    window = window.add(
        Message.user("Option A or B? Not option A, it is too early."), Message.assistant("B then.")
    )
    window = _note_turn(window, "I might like lounges?", "Might like lounges", False, 2)
    window = _note_turn(window, "不要红眼航班。", "Avoids red-eye flights", True, 3)
    for n in range(4):
        window = window.add(Message.user(f"question {n}"), Message.assistant(f"answer {n}"))
    return window


def test_prune_keeps_the_last_turns_and_every_saved_note() -> None:
    window = _conversation()
    assert not window.reinject
    pruned = window.prune(keep_turns=2)
    assert [m.content for m in pruned.messages if m.role == "user"] == ["question 2", "question 3"]
    assert pruned.notes == ("Prefers aisle seats", "Avoids red-eye flights")
    assert "Might like lounges" not in pruned.summary_text()  # refused: never a note
    assert pruned.reinject and pruned.pruned_turns == 6


def test_a_tool_call_id_used_again_in_a_later_turn_pairs_with_its_own_result() -> None:
    """Ids are unique within one reply only (a server may number each reply's calls from
    call_0): a result answers the call before it, not every call of that id."""
    window = Window()
    for text, saved in [("Prefers aisle seats", True), ("Might like lounges", False),
                        ("Likes tea", True), ("Wants a quiet room", False)]:  # fmt: skip
        call = ToolCall(id="call_0", name="save_memory_note",
                        arguments=json.dumps({"note": text, "scope": "session"}))  # fmt: skip
        window = window.add(Message.user(text), Message.assistant(None, [call]),
                            Message.tool("call_0", json.dumps({"saved": saved})))  # fmt: skip
    window = window.add(Message.user("thanks"), Message.assistant("ok"))
    assert window.prune(keep_turns=1).notes == ("Prefers aisle seats", "Likes tea")


def test_a_call_left_unanswered_takes_no_later_reply_s_result() -> None:
    """The app dropped a call (its handler failed): the next reply's call_0 is answered."""
    def call(note: str) -> ToolCall:
        return ToolCall(id="call_0", name="save_memory_note",
                        arguments=json.dumps({"note": note, "scope": "session"}))  # fmt: skip

    window = Window().add(
        Message.user("I have a cat"), Message.assistant(None, [call("Owns a cat")]),
        Message.assistant("Noted."),
        Message.user("Aisle please"), Message.assistant(None, [call("Prefers aisle seats")]),
        Message.tool("call_0", json.dumps({"saved": True})), Message.assistant("ok"),
        Message.user("thanks"), Message.assistant("bye"),
    )  # fmt: skip
    assert window.prune(keep_turns=1).notes == ("Prefers aisle seats",)


def test_summary_keeps_what_the_user_ruled_out() -> None:
    pruned = _conversation().prune(keep_turns=1)
    assert pruned.exclusions == ("Not option A, it is too early.", "不要红眼航班。")
    summary = pruned.summary_text()
    assert '"Not option A, it is too early."' in summary and '"不要红眼航班。"' in summary
    # a tiny summary budget trims the gist, never the exclusions or the notes
    tight = _conversation().prune(keep_turns=1, max_summary_chars=10)
    assert len(tight.summary) == 1 and tight.exclusions == pruned.exclusions
    assert tight.notes == pruned.notes


def test_tool_results_stay_with_their_calls() -> None:
    window = _conversation()
    for keep in range(1, 8):
        kept = window.prune(keep_turns=keep).messages
        calls = {c.id for m in kept for c in m.tool_calls}
        assert {m.tool_call_id for m in kept if m.role == "tool"} <= calls


def test_pruning_twice_accumulates_and_short_windows_are_untouched() -> None:
    window = _conversation()
    once = window.prune(keep_turns=5).add(Message.user("No window seats."))
    twice = once.prune(keep_turns=2)
    assert twice.pruned_turns == once.pruned_turns + 4
    assert twice.notes == ("Prefers aisle seats", "Avoids red-eye flights")
    short = Window().inject("m").add(Message.user("hi"))
    assert short.prune(keep_turns=3) is short and not short.reinject


def test_model_messages_carry_summary_and_the_reinjected_memory(life: Engine) -> None:
    life.save_memory_note(USER, DOMAIN, "Prefers quiet hotels", session_id=SESSION)
    pruned = _conversation().prune(keep_turns=1)
    assert not any(MEMORY_MARK in (m.content or "") for m in pruned.messages)
    again = pruned.inject(life.render_profile(USER, DOMAIN, session_id=SESSION).text)
    sent = again.for_model("You are a travel assistant.")
    assert sent[0].content == "You are a travel assistant."
    assert sent[1].content is not None and sent[1].content.startswith("Summary of 7 earlier")
    assert sent[-1].content is not None and '"Prefers quiet hotels"' in sent[-1].content
    assert not again.reinject


def test_engine_prunes_to_the_configured_window(clock: FrozenClock) -> None:
    config = EngineConfig(lifecycle=LifecycleConfig(window_turns=2))
    with Engine(clock=clock, config=config) as engine:
        pruned = engine.prune(_conversation())
    assert [m.content for m in pruned.messages if m.role == "user"] == ["question 2", "question 3"]
    with pytest.raises(InvalidOperation):
        pruned.prune(keep_turns=0)


def test_a_plain_list_of_messages_is_refused_with_how_to_wrap_it(plain: Engine) -> None:
    chat = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    with pytest.raises(InvalidOperation) as refused:
        plain.prune(chat)  # type: ignore[arg-type]
    assert refused.value.code == "window.type" and "Window" in refused.value.message
