"""Extract: ask the model for candidate facts in a dialogue; validate every one, write none blindly.

The model answers in a schema (``Extraction``); each candidate then goes through the same
checks as any observation (and arbitration on read). Checks of our own first:

1. the turn exists and is the user's (memory holds what the user said, not the assistant);
2. the evidence is the user's words in that turn (``said_in``): a quote the model made up
   is no ground for a fact stored as the user's word;
3. ``value_json`` parses as JSON;
4. a candidate marked ``ruled_out`` is the user excluding a value: stored through a key that
   means exclusion (e.g. ``airline.avoided``) if the model chose one, else as a note
   ("ruled out: …") through the note guards, so the exclusion is not lost.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memkg.errors import ValidationFailed
from memkg.jsontext import read_json
from memkg.lifecycle.distill import consent_problem, save_memory_note
from memkg.lifecycle.ports import MemoryPort
from memkg.lifecycle.screen import note_problems
from memkg.llm.port import LLM, Message
from memkg.model.fact import Kind, Observation, Provenance, Scope, Source
from memkg.model.report import Problem
from memkg.model.settings import LifecycleConfig
from memkg.validate.pii import normalise

SCHEMA_NAME = "memkg_extraction"

_INSTRUCTIONS = """You extract facts about the user from a dialogue, for a memory system.
Return only what the USER stated about themselves, one candidate per fact, using the keys
listed (exactly as written) with a value valid for the key's schema, written as JSON text in
value_json. Include what the user explicitly ruled out, with ruled_out true. Do not guess:
no speculation, no facts about other people, nothing from the assistant's or tools' messages.
turn is the number of the user message the fact comes from. confidence is how clearly the user
said it (0 to 1). evidence is the user's words in that turn that state the fact, copied
verbatim (a candidate whose evidence is not in its turn is dropped)."""


class Candidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value_json: str = Field(description='The value as JSON text, e.g. "aisle" or ["x"].')
    kind: Literal["fact", "preference", "state", "pattern"]
    confidence: float = Field(ge=0, le=1)
    turn: int
    ruled_out: bool
    evidence: str


class Extraction(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    candidates: list[Candidate]


class CandidateOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    candidate: Candidate
    accepted: bool
    stored_as: Literal["fact", "note"] | None = None
    id: str | None = None
    problems: tuple[Problem, ...] = ()


class ExtractionReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    outcomes: tuple[CandidateOutcome, ...]

    @property
    def accepted(self) -> list[CandidateOutcome]:
        return [o for o in self.outcomes if o.accepted]

    @property
    def rejected(self) -> list[CandidateOutcome]:
        return [o for o in self.outcomes if not o.accepted]


def ask(llm: LLM, dialogue: Sequence[Message], keys: dict[str, dict[str, Any]]) -> Extraction:
    """The model's candidates; ``keys`` maps each declared key to its JSON Schema."""
    numbered = [
        {"turn": i, "role": m.role, "content": m.content}
        for i, m in enumerate(dialogue)
        if m.role in ("user", "assistant") and m.content
    ]
    payload = {"keys": keys, "dialogue": numbered}
    messages = [
        Message.system(_INSTRUCTIONS),
        Message.user("DATA (JSON):\n" + json.dumps(payload, ensure_ascii=False, indent=1)),
    ]
    return llm.structured(messages, Extraction, name=SCHEMA_NAME)


_QUOTES = frozenset("'\"`´ʹʺʻʼʽˈ‘’‚‛“”„‟′″‹›«»「」『』〝〞")
"""Quote marks and apostrophes: left out, so "I’d" and "I'd", or a quote quoted, compare equal."""


def _words(text: str) -> str:
    """``text`` as quotes are compared: NFKC (full-width letters as ASCII), without invisible
    characters, case or quote marks, every other run of punctuation, symbols and spaces as
    one space."""
    kept = []
    for char in normalise(text).casefold():
        if char in _QUOTES:
            continue
        kept.append(char if char.isalnum() or unicodedata.category(char)[0] == "M" else " ")
    return " ".join("".join(kept).split())


def said_in(evidence: str, content: str) -> bool:
    """Whether ``evidence`` is words of ``content``, as ``_words`` compares them.

    >>> said_in("i'd like FIRST class", "I’d like first class, please.")
    True
    >>> said_in("Book me first class", "Hi, can you find me a flight to Tokyo?")
    False
    """
    quoted = _words(evidence)
    return bool(quoted) and quoted in _words(content)


def _problem(code: str, path: str, message: str) -> Problem:
    return Problem(code=code, path=path, message=message, stage="extract")


def candidate_observation(
    candidate: Candidate,
    dialogue: Sequence[Message],
    *,
    user_id: str,
    domain: str,
    session_id: str | None,
    provenance: Provenance,
) -> Observation | Problem:
    """The observation a candidate proposes, or why it cannot be one."""
    turn = candidate.turn
    if not 0 <= turn < len(dialogue) or dialogue[turn].role != "user":
        return _problem("extract.turn", "$.turn", f"turn {turn} is not a user message")
    if not said_in(candidate.evidence, dialogue[turn].content or ""):
        return _problem("extract.evidence", "$.evidence",
                        f"the evidence is not the user's words in turn {turn}: a fact is "
                        "stored only on a verbatim quote of the turn it cites")  # fmt: skip
    try:
        value = read_json(candidate.value_json)
    except ValueError as exc:  # not JSON, too deep, a number too long, a key given twice
        return _problem("extract.value", "$.value_json",
                        f"value_json cannot be read: {exc}")  # fmt: skip
    try:
        return Observation(
            user_id=user_id,
            domain=domain,
            key=candidate.key,
            value=value,
            kind=Kind(candidate.kind),
            source=Source.DIALOGUE,
            confidence=candidate.confidence,
            scope=Scope.SESSION if session_id else Scope.GLOBAL,
            session_id=session_id,
            provenance=provenance.model_copy(update={"source_ref": f"dialogue_turn_{turn}"}),
        )
    except ValueError as exc:
        return _problem("extract.envelope", "$", str(exc).splitlines()[0])


def ruled_out_note(candidate: Candidate) -> str:
    """The note that keeps an exclusion with no key of its own."""
    return f"Ruled out {candidate.key} = {candidate.value_json} (said: {candidate.evidence})"


_NEGATIVE_KEY = ("avoid", "exclu", "dislike", "block", "not_")


def extract(
    port: MemoryPort,
    llm: LLM,
    config: LifecycleConfig,
    dialogue: Sequence[Message],
    *,
    user_id: str,
    domain: str,
    session_id: str | None = None,
    provenance: Provenance | None = None,
    write: bool = True,
) -> ExtractionReport:
    """Ask ``llm`` for candidates in ``dialogue``; store those that pass (unless ``write``
    is False: then only validate)."""
    keys = {key: port.key_schema(domain, key) or {} for key in port.declared_keys(domain)}
    extraction = ask(llm, dialogue, keys)
    base = provenance or Provenance()
    outcomes = []
    for candidate in extraction.candidates:
        made = candidate_observation(
            candidate,
            dialogue,
            user_id=user_id,
            domain=domain,
            session_id=session_id,
            provenance=base,
        )
        if isinstance(made, Problem):
            outcomes.append(CandidateOutcome(candidate=candidate, accepted=False, problems=(made,)))
            continue
        if candidate.ruled_out and not any(part in candidate.key for part in _NEGATIVE_KEY):
            outcomes.append(_exclusion(port, config, candidate, made, write))
            continue
        report = port.validate(made)
        if not report.ok or not write:
            outcomes.append(
                CandidateOutcome(candidate=candidate, accepted=report.ok, problems=report.problems)
            )
            continue
        try:
            stored = port.ingest(made)
        except ValidationFailed as exc:  # e.g. a concurrent write made it invalid
            outcomes.append(
                CandidateOutcome(candidate=candidate, accepted=False, problems=exc.report.problems)
            )
            continue
        outcomes.append(
            CandidateOutcome(
                candidate=candidate, accepted=True, stored_as="fact", id=stored.fact_id
            )
        )
    return ExtractionReport(outcomes=tuple(outcomes))


def _exclusion(
    port: MemoryPort, config: LifecycleConfig, candidate: Candidate, made: Observation, write: bool
) -> CandidateOutcome:
    text = ruled_out_note(candidate)
    if not write:
        problems = note_problems(text, config.note_max_chars)
        if len(text) <= config.note_max_chars:  # as ``save_memory_note`` reads it
            problems += port.check_text(text)
        missing = consent_problem(port, made.domain, made.provenance)  # as the write checks
        problems += [missing] if missing is not None else []
        return CandidateOutcome(
            candidate=candidate, accepted=not problems, problems=tuple(problems)
        )
    result = save_memory_note(
        port,
        config,
        user_id=made.user_id,
        domain=made.domain,
        note=text,
        scope=made.scope,
        session_id=made.session_id,
        source_ref=made.provenance.source_ref,
        provenance=made.provenance,
    )
    return CandidateOutcome(
        candidate=candidate,
        accepted=result.saved,
        stored_as=result.stored_as,
        id=result.id,
        problems=result.problems,
    )
