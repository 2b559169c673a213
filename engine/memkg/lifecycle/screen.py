"""Screens for proposed notes: speculation, directives (role lines too, behind Markdown or chat
markup), tool output, hidden text (beyond the fact guards).

>>> [p.code for p in note_problems("User might prefer aisle seats", 500)]
['note.speculation']
>>> [p.code for p in note_problems("用户可能喜欢靠窗", 500)]
['note.speculation']
>>> note_problems("Prefers aisle seats on long flights", 500)
[]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from memkg.model.report import Problem
from memkg.validate.guards import ADDRESSED, ROLE_MUST, WHEN_ASKED
from memkg.validate.pii import LINE_BREAKS, hidden_tags, normalise, readings

_SPECULATION = re.compile(
    r"(?i)\b(?:might|may|could)\s+(?:\w+\s+){0,2}?(?:prefer|like|want|need|be|have|enjoy|choose"
    r"|go|travel|buy|use|eat|take)\b"
    r"|\b(?:probably|perhaps|maybe|possibly|presumably|likely|unlikely|apparently|seemingly)\b"
    r"|\b(?:seems?|appears?)\s+(?:to|like|that)\b|\bI\s+(?:think|guess|suspect|assume|bet)\b"
    r"|\b(?:not sure|unsure|guessing)\b"
    r"|可能|也许|或许|大概|似乎|好像|估计|猜测|说不定|应该会"
)
_MARKUP = r"^[^\S\n]*(?:[#>*_~|•·+\-–—][^\S\n]*)*"
"""A line's start, past Markdown that leaves a role line a role line (heading, quote, bullet,
bold): ``## System:``, ``> System:``, ``**System:**``."""
_DIRECTIVE = re.compile(
    # a role line; an HTML comment, which a reader of the rendered text never sees, opens one
    rf"(?im)(?:{_MARKUP}|<!--[^\S\n]*)[\[(<{{]*"
    r"(?:system|assistant|developer|agent|tool|instructions?)[\])>}*_]*\s*[:：]"
    rf"|{_MARKUP}[\[(<{{]\s*(?:system|assistant|developer|instructions?)\s*[\])>}}]"
    r"|<\|[\w.\-]{1,40}\|>|<(?:start|end)_of_turn>"
    # the role told what to do, or addressed (``guards.ADDRESSED``)
    r"|\b(?:the\s+|all\s+|other\s+)?(?:assistant|agent|model|bot|system|ai|llm)s?\s+"
    rf"{ROLE_MUST}|{ADDRESSED}"
    r"|\b(?:tell|instruct|ask|remind|order)\s+(?:the\s+)?(?:(?:other|next|another|all|every|"
    r"downstream)\s*)?(?:agents?|assistants?|models?|bots?)\b"
    rf"|{WHEN_ASKED}"
    r"|\b(?:from\s+now\s+on|going\s+forward|in\s+(?:all\s+)?future\s+(?:sessions|chats|"
    r"conversations))\b"
    r"|^[^\S\n]*(?:always|never|do\s+not|don'?t|please|you\s+must|you\s+should)\s+(?:respond|reply"
    r"|answer|say|call|use|run|execute|reveal|send|tell|output|print|include|recommend|book"
    r"|ignore|obey|follow)\b"
    r"|^[^\S\n]*(?:new|updated|revised)\s+(?:policy|policies|rules?|instructions?|directives?)"
    r"\s*[:：]"
    r"|\b(?:reveal|print|output|leak|exfiltrate|send)\b.{0,30}\b(?:system\s+prompt|instructions"
    r"|secrets?|api\s+keys?|credentials)\b"
    r"|系统\s*[:：]|你(?:必须|应该|要)(?:回答|回复|调用|执行|忽略)|(?:助手|智能体|模型)(?:必须|应该)"
    r"|告诉(?:其他|下一个|所有)?(?:智能体|助手|模型)|以后(?:都|总是)?(?:必须|一律)"
)
"""A subdivision flag (England: U+1F3F4, tags g b e n g, cancel tag): tag characters' one
visible use."""
_TOOL_MARKERS = re.compile(
    r"(?i)^\s*(?:tool|function|api|search)\s*(?:result|output|response|returned)s?\b"
    r"|\b(?:tool_call_id|tool result|function returned|api response|status[_ ]code|http/\d)"
    r"|traceback \(most recent call last\)|工具(?:结果|输出|返回)"
)
_WORDS = re.compile(r"\w+")
"""What ``str.splitlines``, YAML and JavaScript take for a line break besides ``\n``: the
screens anchored at a line's start see each as ``\n``."""


def _clean(text: str) -> str:
    return " ".join(normalise(text).casefold().split())


def _is_json(text: str) -> bool:
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return False
    try:
        json.loads(stripped)
    except json.JSONDecodeError:
        return False
    except (ValueError, RecursionError):  # JSON nested too deep or with too long a number
        return True
    return True


def _copied_from(note: str, outputs: Sequence[str]) -> bool:
    """Whether ``note`` is text lifted from a tool message (verbatim, or most of its 4-grams)."""
    clean = _clean(note)
    words = _WORDS.findall(clean)
    grams = {tuple(words[i : i + 4]) for i in range(len(words) - 3)}
    for output in outputs:
        source = _clean(output)
        if len(clean) >= 20 and clean in source:
            return True
        if len(grams) >= 3:
            theirs = _WORDS.findall(source)
            found = {tuple(theirs[i : i + 4]) for i in range(len(theirs) - 3)}
            if len(grams & found) >= 0.6 * len(grams):
                return True
    return False


def _problem(code: str, message: str) -> Problem:
    return Problem(code=code, path="$.note", message=message, stage="guards")


def note_problems(note: str, max_chars: int, tool_outputs: Sequence[str] = ()) -> list[Problem]:
    """Why ``note`` must not become a memory (empty when it may). A note longer than
    ``max_chars`` is refused unread: no screen spends time on megabytes it will refuse."""
    if len(note) > max_chars:
        return [
            _problem(
                "note.too_long",
                f"{len(note)} characters (at most {max_chars}): keep one short fact per note",
            )
        ]
    # so invisible and bidirectional characters cannot split a word, nor a line break other
    # than \n hide a line's start
    text = LINE_BREAKS.sub("\n", normalise(note))
    if not text.strip():
        return [_problem("note.empty", "the note is empty: say what to remember about the user")]
    problems = []
    # as a person sees the text, if right-to-left controls show it in another order
    seen = readings(note)
    reordered = seen[1:]
    if hidden_tags(note):
        problems.append(
            _problem(
                "note.hidden_text",
                "holds Unicode tag characters (U+E0000 to U+E007F): they show as nothing, yet "
                "a model reads the letters they stand for; send the note as visible text only",
            )
        )
    if _SPECULATION.search(text) or any(_SPECULATION.search(one) for one in reordered):
        problems.append(
            _problem(
                "note.speculation",
                "reads as a guess, not something the user said; save only what the user "
                "stated, or ask them",
            )
        )
    if _DIRECTIVE.search(text) or any(_DIRECTIVE.search(one) for one in seen):
        problems.append(
            _problem(
                "note.directive",
                "reads as an instruction to the assistant or other agents; memory holds facts "
                "about the user (write 'prefers replies in French', not 'always reply in "
                "French')",
            )
        )
    if (_is_json(note) or _TOOL_MARKERS.search(text) or _copied_from(note, tool_outputs)
            or any(_TOOL_MARKERS.search(one) for one in reordered)):  # fmt: skip
        problems.append(
            _problem(
                "note.tool_output",
                "looks like a tool result; memory keeps what the user said or chose, not "
                "tool output (note the user's choice instead)",
            )
        )
    return problems
