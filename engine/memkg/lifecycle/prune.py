"""Prune: a conversation window that keeps the last N turns plus a summary, and never a note less.

A turn is a user message and everything that answered it (assistant replies, tool calls and
their results stay together, as the chat API requires). Pruning moves older turns into a
deterministic summary that keeps, verbatim, every sentence in which the user ruled something
out ("not option A", "不要红眼航班") and every note saved through ``save_memory_note``; then
it sets ``reinject`` so the agent puts a fresh memory block in front of the next turn.

>>> w = Window().inject("memory v1").add(Message.user("Not the red-eye, please."))
>>> w = w.add(Message.assistant("OK")).add(Message.user("Aisle seat."))
>>> p = w.prune(keep_turns=1)
>>> p.reinject, p.exclusions
(True, ('Not the red-eye, please.',))
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from memkg.errors import InvalidOperation
from memkg.lifecycle.note_tool import NAME as NOTE_TOOL
from memkg.llm.port import Message

MEMORY_MARK = "[memkg memory]"
_SENTENCES = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
_EXCLUSION = re.compile(
    r"(?i)\b(?:not|no|don'?t|doesn'?t|won'?t|never|no longer|rather than|instead of|except"
    r"|avoid|exclude|without|none of|anything but)\b|不要|不想|别|不是|除了|不用|排除|不能"
)


class Window(BaseModel):
    """The messages an agent sends (without its system prompt), as a frozen value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...] = ()
    summary: tuple[str, ...] = ()
    """One line per pruned user message, oldest first."""
    exclusions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Notes saved in pruned turns: kept for the rest of the conversation."""
    reinject: bool = True
    pruned_turns: int = 0

    def add(self, *messages: Message) -> Window:
        return self.model_copy(update={"messages": (*self.messages, *messages)})

    def inject(self, memory: str) -> Window:
        """Put a memory block (``render_profile(...).text``) in front of the next turn."""
        block = Message.system(f"{MEMORY_MARK}\n{memory}")
        return self.model_copy(update={"messages": (*self.messages, block), "reinject": False})

    def turns(self) -> list[tuple[Message, ...]]:
        """The messages grouped into turns; what precedes the first user message is turn 0."""
        turns: list[list[Message]] = [[]]
        for message in self.messages:
            if message.role == "user" and turns[-1]:
                turns.append([])
            turns[-1].append(message)
        return [tuple(t) for t in turns if t]

    def prune(self, keep_turns: int, *, max_summary_chars: int = 2_000) -> Window:
        """Keep the last ``keep_turns`` user turns (and memory injected within them)."""
        if keep_turns < 1:
            raise InvalidOperation("a window keeps at least the current turn", code="window.keep")
        turns = self.turns()
        starts_with_user = [i for i, t in enumerate(turns) if t[0].role == "user"]
        if len(starts_with_user) <= keep_turns:
            return self
        cut = starts_with_user[-keep_turns]
        old = [m for t in turns[:cut] for m in t]
        kept = [m for t in turns[cut:] for m in t]
        summary, exclusions, notes = list(self.summary), list(self.exclusions), list(self.notes)
        for message in old:
            if message.role == "user" and message.content:
                summary.append(_clip(message.content, 160))
                for sentence in _SENTENCES.findall(message.content):
                    if _EXCLUSION.search(sentence) and sentence.strip() not in exclusions:
                        exclusions.append(sentence.strip())
        notes += [n for n in _saved_notes(old) if n not in notes]
        while sum(map(len, summary)) > max_summary_chars and len(summary) > 1:
            summary.pop(0)  # exclusions and notes are never trimmed, only this gist
        return Window(
            messages=tuple(kept),
            summary=tuple(summary),
            exclusions=tuple(exclusions),
            notes=tuple(notes),
            reinject=True,
            pruned_turns=self.pruned_turns + sum(t[0].role == "user" for t in turns[:cut]),
        )

    def for_model(self, system_prompt: str) -> list[Message]:
        """The full message list: system prompt, summary of pruned turns, kept messages."""
        found = [Message.system(system_prompt)]
        if self.pruned_turns:
            found.append(Message.system(self.summary_text()))
        return [*found, *self.messages]

    def summary_text(self) -> str:
        lines = [f"Summary of {self.pruned_turns} earlier turns (quoted, oldest first):"]
        lines += [f"- user said {json.dumps(s, ensure_ascii=False)}" for s in self.summary]
        if self.exclusions:
            lines.append("The user ruled out (still holds unless they change it):")
            lines += [f"- {json.dumps(s, ensure_ascii=False)}" for s in self.exclusions]
        if self.notes:
            lines.append("Notes saved to memory in those turns:")
            lines += [f"- {json.dumps(s, ensure_ascii=False)}" for s in self.notes]
        return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _saved_notes(messages: list[Message]) -> list[str]:
    """Texts of ``save_memory_note`` calls whose tool result says they were saved."""
    results = {m.tool_call_id: m.content or "" for m in messages if m.role == "tool"}
    found = []
    for message in messages:
        for call in message.tool_calls:
            if call.name != NOTE_TOOL:
                continue
            try:
                note = json.loads(call.arguments).get("note")
                saved = json.loads(results.get(call.id, "{}")).get("saved") is True
            except (json.JSONDecodeError, AttributeError):
                continue
            if saved and isinstance(note, str):
                found.append(note)
    return found
