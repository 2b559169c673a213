"""Merge plans for free-text notes: asked of the model, or made deterministically.

A plan says which notes become which long-term memory, which notes go, and which notes
contradicted each other. The model's plan is checked before use (every session note accounted
for exactly once, only known ids, no turn-scope note in a memory, each text through the note
screens, no long-term note changed that no session note is part of); the fallback plan
merges normalized duplicates, drops turn-scope notes as ephemeral, and settles negation-only
contradictions ("likes X" / "does not like X") by recency, reporting each one.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memkg.lifecycle.notes import Note
from memkg.llm.port import LLM, Message
from memkg.model.fact import Scope

SCHEMA_NAME = "memkg_consolidation"

_INSTRUCTIONS = """You consolidate memory notes about one user into long-term memory.
Input: session notes (new) and long-term notes (existing), each with id, text, scope and time.
Return memories: each a text (third person, one fact) and from_notes, the ids it replaces.
Merge paraphrases into one memory; prefer the specific over the general; drop ephemeral
details (only true for this conversation) into dropped with a reason. A turn-scope note is an
instruction for one request: it is never a memory, nor part of one; drop it as ephemeral.
When notes contradict
each other, keep the most recent one and ALSO list the contradiction in conflicts (note_ids,
the kept id, a description): never resolve a contradiction silently. Every session note id
must appear exactly once, in memories or in dropped. Long-term notes you leave unchanged may
be omitted. Change a long-term note only together with a session note: merge it into a memory
that also lists a session note, or drop it as superseded and list the conflict with that
session note. Never add anything the notes do not say: write a memory in its notes' own words,
adding at most words of degree, frequency or liking ("strongly", "usually", "prefers"), and
keep a negative note ("does not", "avoids", "is allergic to") word for word."""

Reason = Literal["paraphrase", "specific_over_general", "single", "recency"]


class Memory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    from_notes: list[str]
    reason: Reason


class Dropped(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    note_id: str
    reason: Literal["ephemeral", "duplicate", "superseded"]


class Conflict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    note_ids: list[str]
    kept: str
    description: str


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: list[Memory]
    dropped: list[Dropped]
    conflicts: list[Conflict]


def _row(note: Note) -> dict[str, str]:
    return {
        "id": note.id,
        "text": note.text,
        "scope": note.scope.value,
        "observed_at": note.observed_at.isoformat(),
    }


def llm_plan(llm: LLM, session: Sequence[Note], lasting: Sequence[Note]) -> Plan:
    data = {
        "session_notes": [_row(n) for n in session],
        "long_term_notes": [_row(n) for n in lasting],
    }
    messages = [
        Message.system(_INSTRUCTIONS),
        Message.user("NOTES (JSON):\n" + json.dumps(data, ensure_ascii=False, indent=1)),
    ]
    return llm.structured(messages, Plan, name=SCHEMA_NAME)


def plan_problems(
    plan: Plan, session: Sequence[Note], lasting: Sequence[Note], screen: Callable[[str], list[str]]
) -> list[str]:
    """Why ``plan`` cannot be applied (empty when it can); ``screen`` returns the codes of the
    note screens' refusals of a text.

    The problems name notes by id and memories by their place in the plan, never by text:
    they are stored with the consolidation (``fallback_reason``), which must hold nothing a
    purge of a note would have to find, nor what the model made up.

    Nothing a note says is lost to the plan: a memory says what its notes said (``unsaid``,
    both ways for a memory of one note, which rewords it; the numbers of every note it
    merges), a note dropped as a duplicate says nothing a memory or a note kept does not,
    one dropped as superseded lost a listed conflict, and a note saying what the user does
    not want or cannot have is never dropped as ephemeral, nor lost to a note about
    something else."""
    known = {n.id for n in (*session, *lasting)}
    used = [i for m in plan.memories for i in m.from_notes] + [d.note_id for d in plan.dropped]
    unknown = set(used) - known  # the model's text: counted, never quoted
    problems = [f"{len(unknown)} unknown note id(s)"] if unknown else []
    problems += [
        f"note {i} used more than once"
        for i in sorted({i for i in used if used.count(i) > 1} - unknown)
    ]
    problems += [f"session note {n.id} not accounted for" for n in session if n.id not in used]
    turn = {n.id for n in session if n.scope is Scope.TURN}
    texts = {n.id: n.text for n in (*session, *lasting)}
    for place, memory in enumerate(plan.memories, 1):
        # a note losing a listed conflict to a note of this memory that gives a number of its
        # own on the same thing ("takes 20 mg" over "takes 10 mg") may lose its number
        losing = {i for c in plan.conflicts
                  if c.kept in memory.from_notes and c.kept in texts
                  and _about_numbers(texts[c.kept]) for i in c.note_ids
                  if i != c.kept and i in texts
                  and _same_topic(texts[i], texts[c.kept])}  # fmt: skip
        said = [texts[i] for i in memory.from_notes if i in texts]
        if not memory.from_notes:
            problems.append(f"memory {place} merges no note")
        added = unsaid(memory.text, said)
        if added:
            problems.append(f"memory {place} says what its notes never said "
                            f"({len(added)} word(s) or note(s))")  # fmt: skip
        lost = (
            [w for w in unsaid(said[0], [memory.text]) if w not in _FIRST_PERSON]
            if len(said) == 1
            else _numbers_lost(memory, [texts[i] for i in memory.from_notes
                                        if i in texts and i not in losing])
        )  # fmt: skip
        if lost:
            problems.append(f"memory {place} leaves out what its note(s) said "
                            f"({len(lost)} word(s) or note(s))")  # fmt: skip
        problems += [
            f"turn-scope note {i} made part of a lasting memory (memory {place}): a turn "
            "instruction never lasts"
            for i in memory.from_notes
            if i in turn
        ]
        if refused := screen(memory.text):
            problems.append(f"memory {place} refused by the note screens "
                            f"({', '.join(dict.fromkeys(refused))})")  # fmt: skip
    for place, conflict in enumerate(plan.conflicts, 1):
        if conflict.kept not in conflict.note_ids or not set(conflict.note_ids) <= known:
            problems.append(f"conflict {place} names unknown or unkept notes")
    problems += [
        f"session note {n.id} says what the user does not want or cannot have: it is never "
        "dropped as ephemeral"
        for n in session
        if n.scope is not Scope.TURN and negated(n.text)
        and any(d.note_id == n.id and d.reason == "ephemeral" for d in plan.dropped)
    ]  # fmt: skip
    return problems + _dropped_unsaid(plan, session, lasting) + _untouched(plan, session, lasting)


_FIRST_PERSON = frozenset({"i", "im", "ive", "am", "my", "me", "mine", "myself"})
"""Words a memory of one note leaves out without losing anything: the note in the user's
words ("I am vegetarian"), the memory in the third person ("Is vegetarian")."""


def _numbers_lost(memory: Memory, said: Sequence[str]) -> list[str]:
    """The numbers of ``said`` (a dose, a count, a time) that ``memory`` no longer says: a
    memory of several notes may keep the specific over the general, but never lose one."""
    has = _forms_of(_words(_as_compared(memory.text), stem=False))
    return [w for note in said for w in _words(_as_compared(note), stem=False)
            if any(c.isdigit() for c in w) and not _forms(w) & has]  # fmt: skip


def _about_numbers(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _same_topic(one: str, other: str) -> bool:
    """Whether two notes share what they are about (``_topic``)."""
    return bool(_topic(_words(_as_compared(one), stem=False))
                & _topic(_words(_as_compared(other), stem=False)))  # fmt: skip


def _dropped_unsaid(plan: Plan, session: Sequence[Note], lasting: Sequence[Note]) -> list[str]:
    """Session notes dropped as duplicates though nothing kept says what they said, or as
    superseded though no listed conflict has them lose (one saying what the user does not
    want or cannot have, to a note about the same thing)."""
    drops = {d.note_id: d.reason for d in plan.dropped}
    kept = [m.text for m in plan.memories]
    kept += [n.text for n in (*session, *lasting) if n.id not in drops]
    texts = {n.id: n.text for n in (*session, *lasting)}
    lost = {i for c in plan.conflicts for i in c.note_ids if i != c.kept
            if c.kept in texts and (not negated(texts.get(i, ""))
                                    or _same_topic(texts.get(i, ""), texts[c.kept]))}  # fmt: skip
    problems = []
    for note in session:
        reason = drops.get(note.id)
        if reason == "duplicate" and not any(not unsaid(note.text, [k]) for k in kept):
            problems.append(f"session note {note.id} dropped as a duplicate of nothing the "
                            "plan keeps")  # fmt: skip
        elif reason == "superseded" and note.id not in lost:
            problems.append(f"session note {note.id} dropped as superseded though no listed "
                            "conflict has it lose")  # fmt: skip
    return problems


_FILLERS = frozenset({
    "and", "the", "with", "for", "has", "have", "had", "was", "were", "are", "also", "very",
    "more", "most", "much", "that", "this", "than", "then", "who", "which", "what", "when",
    "into", "from", "user", "a", "an", "to", "of", "on", "in", "at", "by", "be", "is", "it",
    "as", "or", "so", "up", "same", "too", "over", "about", "instead", "rather", "would",
})  # fmt: skip
"""Words a rewording adds or leaves out without changing what is said (not a pronoun, not a
number: "with him" for "alone" says something new)."""
_REWORDING = frozenset({
    # degree
    "strongly", "strong", "really", "quite", "lot", "highly", "particularly", "especially",
    "definitely", "clearly", "truly", "greatly", "deeply", "fairly", "extremely",
    # frequency and time
    "usually", "often", "always", "generally", "typically", "mostly", "frequently",
    "normally", "regularly", "consistently", "repeatedly", "again", "still", "now",
    "currently", "whenever", "possible",
    # liking
    "like", "liked", "love", "loved", "prefer", "preferred", "preference", "enjoy", "enjoyed",
    "want", "wanted", "favor", "favour", "favorite", "favourite", "fond", "keen", "care",
    "matter", "important", "importance", "value", "appreciate", "choose", "choice", "option",
    "pick", "tend", "opt", "consider", "priority", "liking",
})  # fmt: skip
"""Words a merged memory may add to or leave out of its notes: of degree, frequency and
liking ("strongly prefers" for "likes ... a lot"); compared as ``_words`` reads them."""
_REWORDING_CHARACTERS = frozenset(
    "很常更最总是经通比较也都的了喜欢偏好爱用户直向来还特重要在意选择倾です"
)
"""The same, in scripts without spaces: very, often, usually, like, prefer, important ..."""
_NEGATIVE = frozenset({
    "not", "no", "never", "nor", "none", "neither", "nothing", "nobody", "nowhere", "without",
    "dont", "doesnt", "didnt", "cant", "cannot", "wont", "wouldnt", "isnt", "arent", "wasnt",
    "werent", "havent", "hasnt", "hadnt", "couldnt", "shouldnt", "mustnt", "aint", "longer",
    "dislike", "disliked", "hate", "hated", "avoid", "avoided", "refuse", "refused", "allergic",
    "intolerant", "afraid", "scared", "fear", "phobia", "stopped", "stop", "quit", "used",
    "formerly", "former", "ex", "except", "unless", "only", "anymore", "but",
    # consent and choices turned down: "opted out of", "declined", "withdrew consent"
    "decline", "declined", "reject", "rejected", "withdraw", "withdrew", "withdrawn",
    "revoke", "revoked", "deny", "denied", "oppose", "opposed", "against", "allergy",
    "intolerance", "contraindicated", "unable",
    # people: a note about someone else ("her mother is vegetarian") is not about the user
    "mother", "father", "parent", "wife", "husband", "partner", "son", "daughter", "child",
    "children", "kid", "brother", "sister", "friend", "colleague", "boss",
})  # fmt: skip
"""Words that turn what a note says around, narrow it, or make it about someone else: a note
holding one is kept as said."""
_NEGATED_RUN = re.compile(
    "不|没|无(?!论)|未(?!来)|别(?![人的墅])|勿|讨厌|戒(?!指)|以前|曾经|除了|"
    "(?<![一两二三四五六七八九十几每])只|ない|なかった|ません|(?<![ず])ず(?!っと)|嫌い|苦手|やめ|以外"
)
"""The same in scripts without spaces (Chinese, Japanese), found in the text itself."""
_DEGREE_RUNS = ("非常", "十分", "特别", "尤其", "一直", "总是", "とても", "すごく")
"""Words of degree in scripts without spaces, read as 很 (very) before the text is cut into
characters: 非 of 非常 is no negation, 一 of 一直 no number."""


def unsaid(text: str, notes: Sequence[str]) -> list[str]:
    """What ``text``, a memory merged from ``notes``, says that they did not (or a note it
    has nothing in common with); empty when it only rewords them.

    A memory may add only words of degree, frequency and liking (``_REWORDING``: "strongly
    prefers" for "likes ... a lot") and words that say nothing (``_FILLERS``), and may leave
    words out (the specific over the general) of notes it shares a word with; a negated note
    ("does not", "avoids", 不) is never reworded: a memory made of one says what its notes
    all say, as they say it. So it cannot add an illness, a person or a number, swallow a
    note about something else, nor turn a note around."""
    words = _words(_as_compared(text), stem=False)
    said = [_words(_as_compared(n), stem=False) for n in notes]
    told = _forms_of(w for note in said for w in note)
    found = [w for w in dict.fromkeys(words) if w in _content(words) and not _forms(w) & told]
    topic = _topic(words)
    found += [f"(nothing of the note {n[:60]!r})" for n, w in zip(notes, said, strict=True)
              if (mine := _topic(w)) and not topic & mine]  # fmt: skip
    if any(map(negated, notes)) and any(
        _words(_as_compared(n)) != _words(_as_compared(text)) for n in notes
    ):
        found.append("(rewords a negated note)")
    return list(dict.fromkeys(found))


@functools.cache
def _spare() -> frozenset[str]:
    """The forms of the words that say nothing new (``_FILLERS``, ``_REWORDING``), negations
    excepted."""
    return _forms_of(_FILLERS | _REWORDING) - _forms_of(_NEGATIVE)


def _content(words: Sequence[str]) -> set[str]:
    """Of ``words``, those that say something (not a filler, not a word of degree)."""
    spare = _spare()
    return {w for w in words if not (_forms(w) & spare)
            and not (len(w) == 1 and w in _REWORDING_CHARACTERS)}  # fmt: skip


def _topic(words: Sequence[str]) -> frozenset[str]:
    """What a note is about: its content words' forms, but those that negate it."""
    return frozenset(_forms_of(_content(words)) - _forms_of(_NEGATIVE))


def negated(note: str) -> bool:
    """Whether ``note`` says what the user does not want, avoids or cannot have ("does not",
    "avoids", "is allergic to", 不)."""
    words = _words(_as_compared(note), stem=False)
    return bool(_forms_of(_NEGATIVE) & _forms_of(words) or _NEGATED_RUN.search(_as_compared(note))
                or _TURNED_DOWN.search(_DASHES.sub("-", unicodedata.normalize(
                    "NFKC", note)).casefold()))  # fmt: skip


_TURNED_DOWN = re.compile(
    r"\bopt(?:s|ed|ing)?[\s-]*out\b|\bobject(?:s|ed|ing)?\s+to\b"
    r"|\b(?:cut|cuts|cutting|rule[sd]?|ruling|stay(?:s|ed|ing)?|keep(?:s|ing)?|kept|left|leaves)"
    r"\s+(?:\w+\s+)?out\b"
)
"""A choice turned down or a thing given up, read as a phrase ("opted out of", "objects to",
"cut out dairy", "keeps gluten out"): "out" and "object" alone are no negation ("eats out",
"collects art objects")."""
_DASHES = re.compile(r"[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]")


def _forms(word: str) -> frozenset[str]:
    """A word and the singulars it may be the plural of: "buses" is "bus", "taxis" "taxi",
    "cities" "city", "tomatoes" "tomato", but "planes" is no "plan"."""
    found = {word}
    if len(word) > 3 and word.isascii() and word.endswith("s") and not word.endswith("ss"):
        found.add(word[:-1])
        if len(word) > 4 and word[:-2].endswith(("s", "x", "z", "ch", "sh", "o")):
            found.add(word[:-2])  # "buses", "tomatoes"; not "toes", "uses"
        if word.endswith("ies") and len(word) > 4:
            found.add(word[:-3] + "y")
    return frozenset(found)


def _forms_of(words: Iterable[str]) -> frozenset[str]:
    return frozenset(form for word in words for form in _forms(word))


def _as_compared(text: str) -> str:
    """The text with its words of degree in scripts without spaces read as 很 (very)."""
    for run in _DEGREE_RUNS:
        text = text.replace(run, "很")
    return text


def _untouched(plan: Plan, session: Sequence[Note], lasting: Sequence[Note]) -> list[str]:
    """Long-term notes the plan changes though no session note is part of the change: a
    session may merge a long-term note into a memory with its own notes, or drop one that a
    listed conflict with its own notes settles; what it did not touch stays as it is. A
    long-term note saying what the user does not want or cannot have ("is allergic to
    penicillin") loses a conflict only to a note about the same thing."""
    new, old = {n.id for n in session}, {n.id: n for n in lasting}
    texts = {n.id: n.text for n in (*session, *lasting)}
    settled = {i for c in plan.conflicts if new & set(c.note_ids) for i in c.note_ids}
    problems = []
    for place, memory in enumerate(plan.memories, 1):
        olds = [old[i] for i in memory.from_notes if i in old]
        kept_as_is = len(memory.from_notes) == 1 and olds and olds[0].text == memory.text
        if olds and not new & set(memory.from_notes) and not kept_as_is:
            problems.append(f"memory {place} rewrites long-term notes no session note is part "
                            "of")  # fmt: skip
    for drop in plan.dropped:
        if drop.note_id in old and (drop.reason != "superseded" or drop.note_id not in settled):
            problems.append(f"long-term note {drop.note_id} dropped ({drop.reason}) though no "
                            "session note contradicts it in a listed conflict")  # fmt: skip
        elif drop.note_id in old and negated(text := old[drop.note_id].text):
            about = _topic(_words(_as_compared(text), stem=False))
            winners = [texts[c.kept] for c in plan.conflicts
                       if drop.note_id in c.note_ids and c.kept in texts]  # fmt: skip
            if not any(about & _topic(_words(_as_compared(w), stem=False)) for w in winners):
                problems.append(f"long-term note {drop.note_id} says what the user does not "
                                "want or cannot have: it loses only to a note about the same "
                                "thing")  # fmt: skip
    return problems


_NEGATION = {"not", "no", "never", "dont", "doesnt", "does", "do", "longer"}
_NEGATION |= {"不", "不再", "没", "未"}  # not, no longer, have not / did not, not yet
_LEAD = re.compile(r"^(?:the user|user)s?\b\s*|^用户\s*")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Scripts written without spaces between words (kana, CJK ideographs)."""
_TOKEN = re.compile(f"不再|[{_CJK}]|[^{_CJK}]+")
"""In a word of those scripts each character is a token, but 不再 ("no longer"); 没有 is 没
and 有, so that "没有X" (has no X) contradicts "有X" (has X)."""


def _words(text: str, *, stem: bool = True) -> list[str]:
    """Comparable tokens: words, and in scripts without spaces, characters (``_TOKEN``), so
    that a negation inside a run ("对青霉素不过敏") stands apart as it does in English; with
    ``stem``, each as ``_singular`` reads it."""
    clean = unicodedata.normalize("NFKC", text).casefold().replace("'", "").replace("’", "")
    clean = _LEAD.sub("", " ".join(re.findall(r"\w+", clean)))
    tokens = [w for word in clean.split() for w in _TOKEN.findall(word)]
    return [_singular(w) for w in tokens] if stem else tokens


def _singular(word: str) -> str:
    """A plural as its singular, alike on both sides of a comparison: "cities" and "city" as
    "city", "movies" and "movie" as "movy", "beaches" and "beach" as "beach", "notes" as
    "note"; no other final "e" is cut, so "planes" and "plans" stay apart."""
    if len(word) <= 3 or word in _NEGATION or not word.isascii():
        return word
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 3 and word.endswith("ie"):
        return word[:-2] + "y"
    if len(word) > 4 and word.endswith(("che", "she", "xe", "sse")):
        return word[:-1]
    return word


def normalized(text: str) -> str:
    """Case, width, punctuation and a leading 'user' ignored: 'User prefers X!' = 'prefers x'."""
    return " ".join(_words(text))


_FOR_NOW = re.compile(
    r"(?i)\b(?:right now|at the moment|for now|today|tonight|this (?:time|once|visit|trip|"
    r"morning|afternoon|evening|week))\b|现在|今天|今晚|这次|目前|暂时"
)
"""Words by which a note says it holds only now ("has a headache right now", "this visit")."""


def for_now(note: str) -> bool:
    """Whether ``note`` says it holds only now, not for good (``_FOR_NOW``); a note saying
    what the user does not want or cannot have lasts whatever it says (``negated``).

    >>> for_now("Has a headache right now"), for_now("Feels dizzy today")
    (True, True)
    >>> for_now("Prefers morning appointments"), for_now("Is allergic to penicillin today")
    (False, False)
    """
    return bool(_FOR_NOW.search(note)) and not negated(note)


def fallback_plan(session: Sequence[Note], lasting: Sequence[Note]) -> Plan:
    """Normalized duplicates merge (newest text kept); negation-only contradictions go to the
    newest, reported; turn-scope notes, and session notes that say they hold only now
    (``for_now``), are dropped as ephemeral."""
    memories: list[Memory] = []
    brief = [n for n in session if n.scope is Scope.TURN or for_now(n.text)]
    dropped = [Dropped(note_id=n.id, reason="ephemeral") for n in brief]
    conflicts: list[Conflict] = []
    groups: dict[str, list[Note]] = {}
    for note in [*lasting, *(n for n in session if n not in brief)]:
        bare = " ".join(w for w in _words(note.text) if w not in _NEGATION)
        groups.setdefault(bare, []).append(note)
    for group in groups.values():
        group.sort(key=lambda n: (n.observed_at, n.seq, n.id))
        if all(n.scope is Scope.GLOBAL for n in group) and len(group) == 1:
            continue  # an untouched long-term note
        newest = group[-1]
        polarity = {normalized(n.text) for n in group}
        agree = [n for n in group if normalized(n.text) == normalized(newest.text)]
        losers = [n for n in group if n not in agree]
        if losers:
            conflicts.append(
                Conflict(
                    note_ids=[n.id for n in group],
                    kept=newest.id,
                    description=f"{len(polarity)} contradicting notes; kept the most recent",
                )
            )
            dropped += [Dropped(note_id=n.id, reason="superseded") for n in losers]
        reason: Reason = "recency" if losers else ("paraphrase" if len(agree) > 1 else "single")
        memories.append(Memory(text=newest.text, from_notes=[n.id for n in agree], reason=reason))
    return Plan(memories=memories, dropped=dropped, conflicts=conflicts)
