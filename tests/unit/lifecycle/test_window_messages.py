"""Window(messages=[...]) takes OpenAI-style dicts or Message values; anything else is a
MemkgError that says which message is wrong and how to write it."""

from __future__ import annotations

import json

import pytest

from memkg import InvalidOperation, Message, Window

DEEP: list[object] = []
for _ in range(100_000):
    DEEP = [DEEP]

OPENAI_CHAT = [
    {"role": "system", "content": "[memkg memory]\nprofile"},
    {"role": "user", "name": "li", "content": "Remember I prefer aisle seats"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "save_memory_note",
                    "arguments": '{"note": "Prefers aisle seats", "scope": "global"}',
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"saved": true, "id": "n1"}'},
    {"role": "assistant", "content": [{"type": "text", "text": "Noted"}, {"type": "refusal"}]},
    {
        "role": "user",
        "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "again"}],
    },
]


def test_openai_style_dicts_are_read_as_messages() -> None:
    window = Window(messages=OPENAI_CHAT)
    assert window.messages == tuple(Message.from_openai(m) for m in OPENAI_CHAT)
    call = window.messages[2].tool_calls[0]
    assert (call.id, call.name) == ("c1", "save_memory_note")
    assert json.loads(call.arguments)["note"] == "Prefers aisle seats"
    assert window.messages[4].content == "Noted" and window.messages[5].content == "hi again"
    assert window.prune(keep_turns=1).notes == ("Prefers aisle seats",)


def test_dicts_and_messages_mix() -> None:
    window = Window(messages=(Message.user("a"), {"role": "assistant", "content": "b"}))
    assert window.messages == (Message.user("a"), Message.assistant("b"))


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        ([{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}], "messages[1]"),
        ([{"content": "no role"}], "messages[0]"),
        ([{"role": "user", "content": 5}], "messages[0]"),
        ([{"role": "assistant", "tool_calls": [5]}], "messages[0]"),
        ([{"role": "assistant", "tool_calls": [{"id": "c", "function": None}]}], "messages[0]"),
        ([{"role": "assistant", "tool_calls": 5}], "messages[0]"),
        ([Message.user("ok"), "hello"], "messages[1]"),
        ("hello", "messages"),
        ({"role": "user", "content": "one dict, not a list"}, "messages"),
        (5, "messages"),
        ([{"role": "user", "content": [{"type": "text", "text": DEEP}]}], "messages[0]"),
    ],
)
def test_what_is_not_a_message_is_a_memkg_error_saying_where(messages: object, where: str) -> None:
    with pytest.raises(InvalidOperation) as refused:
        Window(messages=messages)  # type: ignore[arg-type]
    assert refused.value.code == "window.message"
    assert where in refused.value.message
    assert '{"role": "user", "content": "..."}' in refused.value.message


def test_other_bad_fields_are_a_memkg_error_too() -> None:
    with pytest.raises(InvalidOperation) as refused:
        Window(summary=5)  # type: ignore[arg-type]
    assert refused.value.code == "window.invalid" and "summary" in refused.value.message
    with pytest.raises(InvalidOperation) as refused:
        Window(colour="red")  # type: ignore[call-arg]
    assert refused.value.code == "window.invalid" and "colour" in refused.value.message


def test_add_reads_dicts_too_and_refuses_junk_by_its_place() -> None:
    window = Window().add(Message.user("a"), {"role": "assistant", "content": "b"})
    assert window.messages == (Message.user("a"), Message.assistant("b"))
    with pytest.raises(InvalidOperation) as refused:
        window.add(Message.user("c"), None)  # type: ignore[arg-type]
    assert refused.value.code == "window.message" and "messages[3]" in refused.value.message
