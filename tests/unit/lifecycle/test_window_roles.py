"""Window: every role and content shape an OpenAI-style chat holds is kept, read or refused
with a reason; none is lost when pruning."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkg import InvalidOperation, Message, Window
from memkg.llm import messages_to_wire

IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/seat-map.png"}}


def _chat(first: dict[str, Any], turns: int = 3) -> Window:
    messages: list[dict[str, Any]] = [first]
    for n in range(turns):
        messages += [{"role": "user", "content": f"question {n}"},
                     {"role": "assistant", "content": f"answer {n}"}]  # fmt: skip
    return Window(messages=messages)


@pytest.mark.parametrize("role", ["system", "developer"])
def test_a_system_prompt_given_in_the_window_is_never_pruned(role: str) -> None:
    """The agent's own instructions are no turn of the conversation: pruning them silently
    would leave the model without its rules, with nothing in the summary to say so."""
    prompt = {"role": role, "content": "You are a travel assistant. Never book without asking."}
    pruned = _chat(prompt).prune(keep_turns=1)
    assert pruned.messages[0] == Message.from_openai(prompt)
    assert [m.content for m in pruned.messages[1:]] == ["question 2", "answer 2"]
    assert pruned.prune(keep_turns=1).messages == pruned.messages  # and again


def test_system_messages_in_pruned_turns_stay_in_order_but_memory_blocks_are_reinjected() -> None:
    window = _chat({"role": "system", "content": "You are a travel assistant."}, turns=1)
    window = window.inject("memory v1").add(
        {"role": "developer", "content": "The user is on a mobile phone."},
        Message.user("question 1"), Message.assistant("answer 1"),
        Message.user("question 2"),
    )  # fmt: skip
    pruned = window.prune(keep_turns=1)
    assert [(m.role, m.content) for m in pruned.messages] == [
        ("system", "You are a travel assistant."),
        ("developer", "The user is on a mobile phone."),
        ("user", "question 2"),
    ]
    assert pruned.reinject


def test_a_developer_message_goes_back_to_the_model_as_it_came() -> None:
    window = Window(messages=[{"role": "developer", "content": "Be brief."}])
    assert messages_to_wire(window.messages) == [{"role": "developer", "content": "Be brief."}]


@pytest.mark.parametrize(
    "message",
    [
        {"role": "function", "name": "get_weather", "content": '{"sky": "clear"}'},
        {"role": "assistant", "content": None,
         "function_call": {"name": "get_weather", "arguments": "{}"}},
    ],
    ids=["function result", "function call"],
)  # fmt: skip
def test_the_legacy_function_calling_shape_is_refused_saying_what_to_send(
    message: dict[str, Any],
) -> None:
    """Read as something else, the call or its result would vanish from the window."""
    with pytest.raises(InvalidOperation) as refused:
        Window(messages=[{"role": "user", "content": "Weather?"}, message])
    assert refused.value.code == "window.message" and "messages[1]" in refused.value.message
    assert "tool_calls" in refused.value.message and '"tool"' in refused.value.message


def test_tool_call_arguments_given_as_an_object_are_read_as_json_text() -> None:
    """OpenAI's SDK sends the arguments as a string; a caller building dicts by hand often
    writes the object itself, and the note it saved must still be kept."""
    window = Window(messages=[
        {"role": "user", "content": "Remember I prefer aisle seats"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "save_memory_note",
                         "arguments": {"note": "Prefers aisle seats", "scope": "global"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"saved": true}'},
        {"role": "user", "content": "Thanks"},
    ])  # fmt: skip
    call = window.messages[1].tool_calls[0]
    assert json.loads(call.arguments) == {"note": "Prefers aisle seats", "scope": "global"}
    assert window.prune(keep_turns=1).notes == ("Prefers aisle seats",)


def test_input_text_parts_are_text_and_parts_are_joined_with_a_space() -> None:
    """Two sentences run together ("red-eye.Aisle") read as one sentence that is neither."""
    said = {"role": "user", "content": [{"type": "input_text", "text": "Not the red-eye."},
                                        {"type": "text", "text": "Aisle please"}]}  # fmt: skip
    window = Window(messages=[said, {"role": "assistant", "content": "OK"},
                              {"role": "user", "content": "Book it"}])  # fmt: skip
    assert window.messages[0].content == "Not the red-eye. Aisle please"
    assert window.prune(keep_turns=1).exclusions == ("Not the red-eye.",)


@pytest.mark.parametrize(
    "content",
    [[IMAGE], [{"type": "text", "text": "Which seat is this?"}, IMAGE], None],
    ids=["image only", "text and image", "none"],
)
def test_a_message_with_content_memkg_does_not_read_is_kept_as_it_came(content: Any) -> None:
    """memkg reads the text; what it does not read (an image) is still the user's message,
    and the model must see it while the turn is kept."""
    message = {"role": "user", "content": content}
    window = Window(messages=[message])
    assert messages_to_wire(window.prune(keep_turns=1).messages) == [message]
