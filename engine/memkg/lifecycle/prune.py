"""Prune: a conversation window that keeps the last N turns plus a summary, and never a note less.

A turn is a user message and everything that answered it (assistant replies, tool calls and
their results stay together, as the chat API requires). The agent's own system and developer
messages are no turn's: pruning keeps them, in their order, ahead of the kept turns (all but
memory blocks, which ``reinject`` replaces). Pruning moves older turns into a
deterministic summary that keeps, verbatim, every sentence in which the user ruled something
out ("Not option A", "Never before 7.45 a.m.", "不要红眼航班") and every note saved through
``save_memory_note``; then it sets ``reinject`` so the agent puts a fresh memory block in
front of the next turn.

The summary is bounded except for the notes, which are all kept: a window pruned every turn
for a whole day grows only by the notes saved in it. The gist (one clipped line per pruned user
message) keeps the newest lines within ``max_summary_chars``, and the rulings-out the newest
within ``MAX_EXCLUSION_CHARS`` (each clipped to ``EXCLUSION_CLIP`` with a visible "…"; one said
again moves to its newest place). Pruning is linear in the size of the window.

>>> w = Window().inject("memory v1").add(Message.user("Not the red-eye, please. I'm not sure."))
>>> w = w.add(Message.assistant("OK")).add(Message.user("Aisle seat."))
>>> p = w.prune(keep_turns=1)
>>> p.reinject, p.exclusions
(True, ('Not the red-eye, please.',))
>>> sentences("No flights before 7.45 a.m. on weekdays. Thanks!")
['No flights before 7.45 a.m. on weekdays.', 'Thanks!']
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memkg.errors import InvalidOperation
from memkg.lifecycle.inject import quote
from memkg.lifecycle.note_tool import NAME as NOTE_TOOL
from memkg.llm.port import Message

MEMORY_MARK = "[memkg memory]"
MAX_EXCLUSION_CHARS = 2_000
"""The rulings-out a window keeps: the newest whose lengths add up to at most this."""
EXCLUSION_CLIP = 240
SUMMARY_CLIP = 160
_EXAMPLE = '{"role": "user", "content": "..."}'

_TERMINATORS = re.compile(r"[.!?。！？\n]+")
_CLOSERS = frozenset("\"'”’)]」』）")
_WORD_BEFORE = re.compile(r"[A-Za-z]+(?:\.[A-Za-z]+)*\Z")
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "gen", "capt"})
"""A dot after these never ends a sentence ("Dr. Li")."""
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "vs", "etc", "approx", "incl", "cf", "ca", "a.m", "p.m", "no", "nr", "min"}
)
"""A dot after these (or after one letter) ends a sentence only before a capital letter."""

_NEGATION = (
    r"(?:\bnot|n['’]t|\b(?:do|does|did|is|are|was|were|ca|wo|would|could|should|have|has)nt)"
)
"""not, n't, or the "dont" of a hurried user."""
_CLAUSE_END = r"(?=\s*(?:[,;:.!?…]|$))"
_EXCLUSION = re.compile(
    rf"(?i){_NEGATION}\b|\b(?:no|never|cannot|none\s+of|except(?:ing)?|without|instead\s+of"
    r"|avoid(?:s|ing|ed)?|exclud(?:e|es|ed|ing)|rather\s+than|(?:anything|anywhere|anyone)\s+but)\b"
    r"|不要|不想|别|不是|不用|不能|除了|排除|避免|再也不|从不|从来不|不再|不喜欢|不吃|不喝"
)
"""The words that rule something out, anywhere in a sentence: not, n't, no, never, cannot,
except, without, avoid, exclude, instead of, rather than, none of, anything but; 不要, 不想, 别,
不是, 不用, 不能, 除了, 排除, 避免, 再也不, 从不, 不再, 不喜欢, 不吃, 不喝."""
_MENTAL = (
    r"know|mind|care(?!\s+for\b)|worry|think|remember|understand|see|get\s+(?:it|me\s+wrong)"
    r"|hesitate|forget|mention\s+it|matter|have\s+(?:a|any)\s+preference"
)
_PLEASANTRY = re.compile(
    r"(?i)^\W*(?:(?:and|but|so|also|oh|ok|okay|please)[,\s]+)?not\s+(?:really|now|quite|exactly"
    rf"|much|too(?:\s+bad)?|at\s+all|so|today|entirely|totally|great|good|that\s+much){_CLAUSE_END}"
    rf"|\bno(?:\s+(?:way|need|one))?{_CLAUSE_END}"
    r"|\bno\s+(?:problems?|worries|worry|thanks|thank\s+you|idea|clue|rush|hurry|doubt|matter"
    r"|pressure|big\s+deal|kidding|offen[cs]e|comment|(?:strong\s+|particular\s+)?preferences?"
    r"|difference)\b"
    rf"|{_NEGATION}\s+(?:(?:so|too|quite|really|entirely|totally|100%)\s+)?(?:sure|certain)\b"
    rf"|{_NEGATION}\s+(?:yet|bad|a\s+problem|to\s+worry|necessarily|that\s+I\s+know)\b"
    rf"|{_NEGATION}\s+(?:{_MENTAL})\b"
    r"|\b(?:can(?:not|['’]?t|\s+not)|won['’]?t|will\s+not)\s+(?:wait|believe|thank|remember"
    r"|decide|tell|say|find|hear|see|complain|help)\b"
    r"|\bnever\s+(?:mind|been|heard|seen|thought|knew|tried|had|did)\b"
    r"|\bwithout\s+(?:a\s+)?doubt\b"
    r"|\b(?:is|are|was|were|do|does|did|would|could|should|will|can)\s+(?:it|that|this|there)"
    r"\s+not\b|\b(?:is|are|was|were|do|does|did|would|could|should|wo|ca)n['’]?t\s+(?:it|that"
    r"|this|there)\b"
    r"|要不要|想不想|是不是|用不用|能不能|不要紧|不用[谢了客]|不是(?:很确定|太确定|很清楚|吗|问题)"
    r"|不能(?:确定|肯定)|[特分区告级识类性差离辨派鉴送惜]别|别[的人客处墅急担着]"
)
"""The exceptions: what holds one of those words and rules nothing out. Pleasantries ("No
problem", "No worries", "No thanks", "Never mind", "I can't wait", "Without a doubt", 不用谢),
doubt ("Not sure", "Not yet", "I don't know", "I don't mind", "Is it not cheaper?"), and words
that hold 别 or 不要 (特别, 别的, 要不要, 不要紧). A bare "No", "No way", "No need" or an
opening "Not really"/"Not now" is one only where it ends a clause ("No need to book a car."
rules the car out)."""


class Window(BaseModel):
    """The messages an agent sends (best without its system prompt: ``for_model`` puts it
    first), as a frozen value.

    ``messages`` takes ``Message`` values or OpenAI-style dicts (content parts, ``tool_calls``,
    ``name``); anything else is an ``InvalidOperation`` (``window.message``) naming the item.
    A system or developer message in it is never pruned.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...] = ()
    summary: tuple[str, ...] = ()
    """One line per pruned user message, oldest first."""
    exclusions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Notes saved in pruned turns: kept for the rest of the conversation."""
    reinject: bool = True
    pruned_turns: int = 0

    def __init__(self, **data: Any) -> None:
        if "messages" in data:
            data["messages"] = _messages(data["messages"])
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]
            )
            raise InvalidOperation(
                f"Window: {problems}; give messages (Message values or OpenAI-style dicts "
                "such as " + _EXAMPLE + ") and leave the other fields to prune",
                code="window.invalid",
            ) from None

    def add(self, *messages: Message | Mapping[str, Any]) -> Window:
        added = _messages(messages, first=len(self.messages))
        return self.model_copy(update={"messages": (*self.messages, *added)})

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
        """Keep the last ``keep_turns`` user turns (and memory injected within them), and the
        system and developer messages of the turns before; the gist of the pruned turns keeps
        its newest lines within ``max_summary_chars`` (at least one).
        """
        if type(keep_turns) is not int or keep_turns < 1:  # True and 2.0 are not counts
            raise InvalidOperation(
                f"keep_turns is a whole number of turns from 1 (a window keeps at least the "
                f"current turn), not {keep_turns!r:.40}",
                code="window.keep",
            )
        if type(max_summary_chars) is not int or max_summary_chars < 0:
            raise InvalidOperation(
                f"max_summary_chars is a whole number of characters from 0, not "
                f"{max_summary_chars!r:.40}",
                code="window.summary",
            )
        turns = self.turns()
        starts_with_user = [i for i, t in enumerate(turns) if t[0].role == "user"]
        if len(starts_with_user) <= keep_turns:
            return self
        cut = starts_with_user[-keep_turns]
        old = [m for t in turns[:cut] for m in t]
        kept = [*filter(_standing, old), *(m for t in turns[cut:] for m in t)]
        said = [m.content for m in old if m.role == "user" and m.content]
        ruled_out = [
            _clip(s, EXCLUSION_CLIP) for text in said for s in sentences(text) if rules_out(s)
        ]
        notes = dict.fromkeys([*self.notes, *_saved_notes(old)])  # every note, once, in order
        return Window(
            messages=tuple(kept),
            summary=_newest([*self.summary, *(_clip(t, SUMMARY_CLIP) for t in said)],
                            max_summary_chars),
            exclusions=_newest([*self.exclusions, *ruled_out], MAX_EXCLUSION_CHARS, once=True),
            notes=tuple(notes),
            reinject=True,
            pruned_turns=self.pruned_turns + sum(t[0].role == "user" for t in turns[:cut]),
        )  # fmt: skip

    def for_model(self, system_prompt: str) -> list[Message]:
        """The full message list: system prompt, summary of pruned turns, kept messages."""
        found = [Message.system(system_prompt)]
        if self.pruned_turns:
            found.append(Message.system(self.summary_text()))
        return [*found, *self.messages]

    def summary_text(self) -> str:
        """The pruned turns as the model reads them: the user's newest messages in them, the
        newest rulings-out and every saved note (each section says which it holds)."""
        turns, said = self.pruned_turns, len(self.summary)
        lines = [
            f"Summary of {turns} earlier turn{'s' * (turns != 1)}: the user's last "
            f"{said} message{'s' * (said != 1)} in them (quoted, clipped, oldest first):"
        ]
        lines += [f"- user said {quote(s)}" for s in self.summary]
        if self.exclusions:
            lines.append("The user ruled out (still holds unless they change it):")
            lines += [f"- {quote(s)}" for s in self.exclusions]
        if self.notes:
            lines.append("Notes saved to memory in those turns:")
            lines += [f"- {quote(s)}" for s in self.notes]
        return "\n".join(lines)


def _standing(message: Message) -> bool:
    """Whether ``message`` is the agent's own instruction, which no pruning drops: a system or
    developer message other than a memory block (the next ``inject`` brings memory anew)."""
    return message.role in ("system", "developer") and not (message.content or "").startswith(
        MEMORY_MARK
    )


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences, never inside a number, a time or an abbreviation."""
    found, start = [], 0
    for run in _TERMINATORS.finditer(text):
        end = run.end()
        while end < len(text) and text[end] in _CLOSERS:
            end += 1
        if _ends_sentence(text, run, end):
            found.append(text[start:end].strip())
            start = end
    found.append(text[start:].strip())
    return [s for s in found if s]


def rules_out(sentence: str) -> bool:
    """Whether the user rules something out in ``sentence``: a word of ``_EXCLUSION`` is left
    once every ``_PLEASANTRY`` is taken out ("No problem, but not Frankfurt." still does)."""
    return _EXCLUSION.search(_PLEASANTRY.sub(" ", sentence)) is not None


def _ends_sentence(text: str, run: re.Match[str], end: int) -> bool:
    mark = run.group()
    if "\n" in mark or any(c in "。！？" for c in mark):
        return True
    if end < len(text) and not text[end].isspace():
        return False  # 2.5, 7.45, example.com: a dot inside a token
    if mark != ".":
        return True
    word = _WORD_BEFORE.search(text, max(0, run.start() - 12), run.start())
    token = word.group().lower() if word else ""
    if token in _TITLES:
        return False
    if token in _ABBREVIATIONS or len(token) == 1 or "." in token:
        following = text[end : end + 8].lstrip()
        return not following or following[0].isupper()
    return True


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not text[limit - 1].isspace():  # do not end inside a word or a number ("2.5" as "2")
        space = cut.rfind(" ")
        cut = cut[:space] if space > limit // 2 else cut.rstrip("0123456789.,:")
    return cut.rstrip() + "…"


def _newest(items: list[str], limit: int, *, once: bool = False) -> tuple[str, ...]:
    """The newest ``items`` (at least one) whose lengths add up to ``limit``, oldest first;
    with ``once`` an item said again counts at its newest place only."""
    kept: list[str] = []
    seen: set[str] = set()
    total = 0
    for item in reversed(items):
        if once and item in seen:
            continue
        if kept and total + len(item) > limit:
            break
        kept.append(item)
        seen.add(item)
        total += len(item)
    return tuple(reversed(kept))


def _messages(value: object, first: int = 0) -> tuple[Message, ...]:
    """``value`` (Message values or OpenAI-style dicts) as messages, or what is wrong where."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidOperation(
            f"Window messages: expected a list of messages, got {type(value).__name__}; "
            f"write Window(messages=[{_EXAMPLE}, ...])",
            code="window.message",
        )
    found = []
    for index, item in enumerate(value, start=first):
        if isinstance(item, Message):
            found.append(item)
            continue
        problem = f"got {type(item).__name__}"
        if isinstance(item, Mapping):
            try:
                found.append(Message.from_openai(item))
                continue
            except ValidationError as exc:
                problem = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}"
                    for e in exc.errors()[:3]
                )
            except (ValueError, AttributeError, TypeError, RecursionError) as exc:
                problem = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise InvalidOperation(
            f"Window messages[{index}] is not a chat message ({problem}); give a Message or "
            f"an OpenAI-style dict such as {_EXAMPLE}",
            code="window.message",
        )
    return tuple(found)


def _saved_notes(messages: list[Message]) -> list[str]:
    """Texts of ``save_memory_note`` calls whose tool result says they were saved; a call or
    result that cannot be read (not JSON, nested too deep, a number too long) saved nothing.

    A result answers a call of the latest reply that made calls, the oldest of its id still
    unanswered there: ids are unique within one reply only (a server may number every reply's
    calls from ``call_0``), and a call left unanswered is not answered by a later reply's."""
    waiting: dict[str, deque[object]] = {}  # per call id, each unanswered call's note
    found = []
    for message in messages:
        if message.tool_calls:
            waiting = {}  # a new reply's calls: an earlier one's left unanswered stay so
        if message.role == "tool":
            calls = waiting.get(message.tool_call_id or "")
            if calls:
                note, result = calls.popleft(), _json(message.content or "{}")
                saved = isinstance(result, dict) and result.get("saved") is True
                if saved and isinstance(note, str):
                    found.append(note)
            continue
        for call in message.tool_calls:
            arguments = _json(call.arguments) if call.name == NOTE_TOOL else None
            note = arguments.get("note") if isinstance(arguments, dict) else None
            waiting.setdefault(call.id, deque()).append(note)  # another tool's call: None
    return found


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError, int digits limit, deep nesting
        return None
