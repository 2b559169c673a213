"""The order a reader sees text in: the bidirectional algorithm (UAX #9), as far as it
moves letters.

A screen that reads text as stored misses what right-to-left overrides show a person (or a
model shown the rendered text) in another order: ``displayed`` gives the text as it reads on
screen, left to right, with the bidi controls taken out. Text without a bidi control comes
back as it is, so ordinary Arabic or Hebrew is read as written.
"""

from __future__ import annotations

import re
import unicodedata

# The bidirectional algorithm (UAX #9), as far as the order a reader sees: explicit levels
# (embeddings, overrides, isolates), the weak and neutral types resolved within each level run
# (not across an isolate's isolating run sequence), implicit levels, then each line reordered.
# Mirrored brackets and shaping change no letter a screen reads, so they are left out.
_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PARAGRAPH_BREAK = re.compile("(\r\n|[\n\r\x1c-\x1e\x85\u2029])")
_LINE_END = frozenset("\v\f\u2028")
_MAX_DEPTH = 125
_OPENERS = frozenset({"LRE", "RLE", "LRO", "RLO", "LRI", "RLI", "FSI"})
_ISOLATES = frozenset({"LRI", "RLI", "FSI", "PDI"})
_NEUTRALS = frozenset({"B", "S", "WS", "ON"}) | _ISOLATES
_REMOVED = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "BN"})
_MARKS = frozenset({"Mn", "Me"})


def _first_strong(types: list[str], start: int, *, isolate: bool) -> int:
    """The level a paragraph (or an isolate, up to its PDI) takes from its first strong
    character outside nested isolates: 1 for R or AL, else 0."""
    depth = 0
    for at in range(start, len(types)):  # no copy of the rest: most stop at once
        kind = types[at]
        if kind in ("LRI", "RLI", "FSI"):
            depth += 1
        elif kind == "PDI":
            if depth == 0 and isolate:
                break
            depth = max(depth - 1, 0)
        elif depth == 0 and kind in ("L", "R", "AL"):
            return 0 if kind == "L" else 1
    return 0


def _explicit(types: list[str], base: int) -> tuple[list[int], list[str]]:
    """Each character's embedding level and its type under any override (rules X1 to X8)."""
    stack: list[tuple[int, str, bool]] = [(base, "", False)]  # level, override, isolate
    over_isolate = over_embedding = isolates = 0
    levels = [base] * len(types)
    kinds = list(types)
    for index, kind in enumerate(types):
        level, override, _ = stack[-1]
        if kind in _OPENERS:
            isolate = kind in _ISOLATES
            if isolate:
                levels[index], kinds[index] = level, override or kind
            if over_isolate or over_embedding:
                over_isolate += isolate
                over_embedding += not isolate and not over_isolate
                continue
            rtl = kind[0] == "R" or (
                kind == "FSI" and _first_strong(types, index + 1, isolate=True) == 1
            )
            new = (level + 1) | 1 if rtl else (level + 2) & ~1
            if new > _MAX_DEPTH:
                over_isolate += isolate
                over_embedding += not isolate
                continue
            stack.append((new, kind[:2] if kind in ("LRO", "RLO") else "", isolate))
            isolates += isolate
        elif kind == "PDI":
            if over_isolate:
                over_isolate -= 1
            elif isolates:
                over_embedding = 0
                while not stack[-1][2]:
                    stack.pop()
                stack.pop()
                isolates -= 1
            level, override, _ = stack[-1]
            levels[index], kinds[index] = level, override[:1] or kind
        elif kind == "PDF":
            if over_isolate:
                pass
            elif over_embedding:
                over_embedding -= 1
            elif not stack[-1][2] and len(stack) > 1:
                stack.pop()
        elif kind != "BN":
            levels[index], kinds[index] = level, override[:1] or kind
    return levels, kinds


def _resolved(kinds: list[str], level: int, sos: str, eos: str) -> list[str]:
    """A level run's weak and neutral types resolved to L, R, EN or AN (rules W1 to N2)."""
    kinds = list(kinds)
    before = sos
    for at, kind in enumerate(kinds):  # W1
        if kind == "NSM":
            kinds[at] = "ON" if before in _ISOLATES else before
        before = kinds[at]
    strong = sos
    for at, kind in enumerate(kinds):  # W2, W3
        if kind in ("L", "R", "AL"):
            strong = kind
            kinds[at] = "R" if kind == "AL" else kind
        elif kind == "EN" and strong == "AL":
            kinds[at] = "AN"
    for at in range(1, len(kinds) - 1):  # W4
        left, right = kinds[at - 1], kinds[at + 1]
        if left == right and (
            (kinds[at] == "ES" and left == "EN") or (kinds[at] == "CS" and left in ("EN", "AN"))
        ):
            kinds[at] = left
    at = 0
    while at < len(kinds):  # W5: European terminators next to a European number
        end = at
        while end < len(kinds) and kinds[end] == "ET":
            end += 1
        touches = kinds[max(at - 1, 0) : at] + kinds[end : end + 1]
        if end > at and "EN" in touches:
            kinds[at:end] = ["EN"] * (end - at)
        at = max(end, at + 1)
    strong = sos
    for at, kind in enumerate(kinds):  # W6, W7
        if kind in ("ES", "ET", "CS"):
            kinds[at] = "ON"
        elif kind in ("L", "R"):
            strong = kind
        elif kind == "EN" and strong == "L":
            kinds[at] = "L"
    own = "R" if level % 2 else "L"
    at = 0
    while at < len(kinds):  # N1, N2
        end = at
        while end < len(kinds) and kinds[end] in _NEUTRALS:
            end += 1
        if end > at:
            left = sos if at == 0 else ("L" if kinds[at - 1] == "L" else "R")
            right = eos if end == len(kinds) else ("L" if kinds[end] == "L" else "R")
            kinds[at:end] = [left if left == right else own] * (end - at)
        at = max(end, at + 1)
    return kinds


def _reordered(chars: list[str], levels: list[int]) -> str:
    """One line in display order (rule L2), a combining mark kept after its letter."""
    units: list[list[str]] = []
    unit_levels: list[int] = []
    for char, level in zip(chars, levels, strict=True):
        if units and unit_levels[-1] == level and unicodedata.category(char) in _MARKS:
            units[-1].append(char)
        else:
            units.append([char])
            unit_levels.append(level)
    odd = [level for level in unit_levels if level % 2]
    for floor in range(max(unit_levels, default=0), min(odd, default=1 << 8) - 1, -1):
        at = 0
        while at < len(units):
            end = at
            while end < len(units) and unit_levels[end] >= floor:
                end += 1
            units[at:end] = units[at:end][::-1]
            unit_levels[at:end] = unit_levels[at:end][::-1]
            at = max(end, at + 1)
    return "".join("".join(unit) for unit in units)


def _paragraph_displayed(text: str) -> str:
    types = [unicodedata.bidirectional(char) or "L" for char in text]
    base = _first_strong(types, 0, isolate=False)
    levels, kinds = _explicit(types, base)
    kept = [at for at, kind in enumerate(types) if kind not in _REMOVED]
    runs: list[list[int]] = []
    for at in kept:
        if runs and levels[runs[-1][-1]] == levels[at]:
            runs[-1].append(at)
        else:
            runs.append([at])
    final = dict.fromkeys(kept, base)
    for number, run in enumerate(runs):
        level = levels[run[0]]
        prior = levels[runs[number - 1][0]] if number else base
        after = levels[runs[number + 1][0]] if number + 1 < len(runs) else base
        sos = "R" if max(level, prior) % 2 else "L"
        eos = "R" if max(level, after) % 2 else "L"
        resolved = _resolved([kinds[at] for at in run], level, sos, eos)
        for at, kind in zip(run, resolved, strict=True):
            if level % 2 == 0:
                final[at] = level + {"R": 1, "AN": 2, "EN": 2}.get(kind, 0)
            else:
                final[at] = level + (kind != "R")
    lines: list[list[int]] = [[]]
    for at in kept:
        lines[-1].append(at)
        if text[at] in _LINE_END:
            lines.append([])
    shown: list[str] = []
    for line in lines:
        trailing = True  # L1: separators, and the spaces before them or a line's end
        for at in reversed(line):
            if types[at] in ("S", "B") or text[at] in _LINE_END:
                trailing = True
            elif types[at] not in ("WS", "LRI", "RLI", "FSI", "PDI"):
                trailing = False
            if trailing:
                final[at] = base
        shown.append(_reordered([text[at] for at in line], [final[at] for at in line]))
    return "".join(shown)


def displayed(text: str) -> str:
    """``text`` in the order it is displayed in, left to right, without the bidirectional
    controls: a run after a right-to-left override (U+202E) reads backwards until its pop
    (U+202C) or the paragraph's end. Text without a bidirectional control is returned as
    stored: right-to-left script in it stays in the order it is written in.

    >>> displayed("take \u202esnoitcurtsni erongi\u202c daily")
    'take ignore instructions daily'
    >>> displayed("\u202e\u202dplain\u202c \u202dtext\u202c")
    'text plain'
    """
    if text.isascii() or not _BIDI_CONTROLS.search(text):
        return text
    # the whole algorithm costs some microseconds a character, and its reordering as many
    # passes as the text nests levels: past this, only what overrides reverse is read, in
    # one pass (a hostile value must not cost a write seconds; ``pii.readings`` reads such
    # text with its words in reverse order too, as marks and embeddings may show them)
    read = _overrides_only if len(text) > FULL_CHARS else _paragraph_displayed
    return "".join(
        part if number % 2 else read(part)
        for number, part in enumerate(_PARAGRAPH_BREAK.split(text))
    )


FULL_CHARS = 500
"""The longest text ``displayed`` runs the whole algorithm on."""

_PUSH = {"\u202a": "", "\u202b": "", "\u202d": "L", "\u202e": "R",
         "\u2066": "", "\u2067": "", "\u2068": ""}  # fmt: skip
"""Each opener, and the override it sets ("": none, only a new level)."""


def _overrides_only(text: str) -> str:
    """``text`` with what each right-to-left override (U+202E) governs reversed, to its pop
    or the paragraph's end, overrides nested as the algorithm nests them, and the controls
    taken out: the letters an override shows backwards, read in one pass over the text.

    >>> _overrides_only("take \u202esnoitcurtsni erongi\u202c daily")
    'take ignore instructions daily'
    """
    # each level: (override, isolate, pieces); a closed level's text joins its parent's,
    # reversed if it was a right-to-left override
    stack: list[tuple[str, bool, list[str]]] = [("", False, [])]
    isolates = skipped = 0  # isolates open; openers past the depth, whose pops do nothing
    for char in text:
        if char in _PUSH:
            if len(stack) <= _MAX_DEPTH:
                isolate = char in "\u2066\u2067\u2068"
                stack.append((_PUSH[char], isolate, []))
                isolates += isolate
            else:
                skipped += 1
        elif char == "\u202c":  # closes an embedding or override, never an isolate
            if skipped:
                skipped -= 1
            elif len(stack) > 1 and not stack[-1][1]:
                override, _, pieces = stack.pop()
                stack[-1][2].append(_closed(override, pieces))
        elif char == "\u2069":  # closes its isolate and all that opened inside it
            if skipped:
                skipped -= 1
            elif isolates:
                while True:
                    override, isolate, pieces = stack.pop()
                    stack[-1][2].append(_closed(override, pieces))
                    if isolate:
                        isolates -= 1
                        break
        elif _BIDI_CONTROLS.match(char) is None:
            stack[-1][2].append(char)
    while len(stack) > 1:
        override, _, pieces = stack.pop()
        stack[-1][2].append(_closed(override, pieces))
    return "".join(stack[0][2])


def _closed(override: str, pieces: list[str]) -> str:
    return "".join(reversed(pieces)) if override == "R" else "".join(pieces)
