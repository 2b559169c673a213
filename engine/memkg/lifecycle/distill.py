"""Distill: the guarded ``save_memory_note`` tool through which a model proposes memories.

Refusals, checked on every note before anything is written (each a stable code and a reason
the model can read and act on):

1. the fact guards on the text: size, identifiers and credentials, injected instructions;
2. ``note.speculation``: a guess about the user ("might prefer…", "可能…") is not a memory;
3. ``note.directive``: instructions aimed at the system or other agents ("the assistant must…");
4. ``note.tool_output``: tool results (JSON, result dumps, text copied from a tool message);
5. ``note.hidden_text``: text spelled in invisible Unicode tag characters;
6. with a ``key``: the key's JSON Schema, SHACL shapes, consent and policy, as any fact.

A note with a declared ``key`` becomes a fact (``source: dialogue``); any other note is stored
as a free-text note (``note.saved``) with the same provenance, scope and lifecycle.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from memkg.errors import ValidationFailed
from memkg.lifecycle.notes import Note, note_event, note_payload
from memkg.lifecycle.ports import MemoryPort
from memkg.lifecycle.screen import note_problems
from memkg.model.event import EventType
from memkg.model.fact import Observation, Provenance, Scope, Source
from memkg.model.report import Problem
from memkg.model.settings import LifecycleConfig

_NEGATED = re.compile(r"(?i)\b(?:not|no|never|don'?t|doesn'?t|won'?t|avoid|except)\b|不|别|没")


class NoteResult(BaseModel):
    """What became of one proposed note; ``for_model()`` is the tool message to send back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    saved: bool
    stored_as: Literal["fact", "note"] | None = None
    id: str | None = None
    reason: str | None = None
    problems: tuple[Problem, ...] = ()

    def for_model(self) -> str:
        if self.saved:
            body: dict[str, Any] = {"saved": True, "stored_as": self.stored_as, "id": self.id}
        else:
            body = {"saved": False, "reason": self.reason, "codes": [p.code for p in self.problems]}
        return json.dumps(body, ensure_ascii=False)


def _invalid(exc: ValidationError) -> Problem:
    first = exc.errors(include_url=False)[0]
    where = "$." + ".".join(str(p) for p in first["loc"])
    return Problem(code="note.invalid", path=where, message=first["msg"], stage="envelope")


def _refused(problems: Sequence[Problem]) -> NoteResult:
    reason = "not saved: " + "; ".join(f"{p.message} ({p.code})" for p in problems[:3])
    return NoteResult(saved=False, reason=reason, problems=tuple(problems))


def _enum_members(schema: dict[str, Any]) -> tuple[list[Any], bool]:
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"]), False
    items = schema.get("items")
    if (
        schema.get("type") == "array"
        and isinstance(items, dict)
        and isinstance(items.get("enum"), list)
    ):
        return list(items["enum"]), True
    return [], False


def infer_value(note: str, schema: dict[str, Any]) -> Any | None:
    """The key's value when the note names exactly the enum member(s) it means, else None.

    Negated notes ("no middle seats") are never inferred: the polarity is the model's to state.
    """
    members, many = _enum_members(schema)
    if not members or _NEGATED.search(note):
        return None
    text = unicodedata.normalize("NFKC", note).casefold()
    named = [
        m
        for m in members
        if isinstance(m, str)
        and re.search(rf"(?<!\w){re.escape(m.replace('_', ' ').casefold())}(?!\w)", text)
    ]
    if many:
        return named or None
    return named[0] if len(named) == 1 else None


def save_memory_note(
    port: MemoryPort,
    config: LifecycleConfig,
    *,
    user_id: str,
    domain: str,
    note: str,
    scope: Scope | str = Scope.SESSION,
    key: str | None = None,
    value: Any = None,
    session_id: str | None = None,
    source_ref: str | None = None,
    provenance: Provenance | Mapping[str, Any] | None = None,
    tool_outputs: Sequence[str] = (),
) -> NoteResult:
    """Guard ``note`` and store it as a fact (with ``key``) or a free-text note."""
    try:
        scope = Scope(scope)
    except ValueError:
        problem = Problem(
            code="note.scope",
            path="$.scope",
            message=f"scope {scope!r} is not one of turn, session, global",
            stage="guards",
        )
        return _refused([problem])
    problems = note_problems(note, config.note_max_chars, tool_outputs)
    if len(note) <= config.note_max_chars:  # one too long is refused unread, as the screens do
        problems += port.check_text(note, "$.note")
    if problems:
        return _refused(problems)
    if isinstance(provenance, Provenance):
        base: dict[str, Any] = provenance.model_dump()
    elif isinstance(provenance, Mapping) or provenance is None:
        base = dict(provenance or {})  # as ``ingest`` takes an observation's, as JSON
    else:
        problem = Problem(code="note.invalid", path="$.provenance", stage="envelope",
                          message="provenance must be an object of provenance fields")  # fmt: skip
        return _refused([problem])
    try:
        prov = Provenance.model_validate(
            {**base, "source_ref": source_ref or base.get("source_ref")}
        )
    except ValidationError as exc:
        return _refused([_invalid(exc)])
    if not port.declared_keys(domain):
        problem = Problem(
            code="domain.unknown",
            path="$.domain",
            message=f"unknown domain {domain!r}",
            stage="envelope",
        )
        return _refused([problem])
    if key is not None:
        return _save_fact(port, config, user_id, domain, note, scope, key, value, session_id, prov)
    missing = consent_problem(port, domain, prov)
    if missing is not None:
        return _refused([missing])
    return _save_note(port, config, user_id, domain, note.strip(), scope, session_id, prov)


def consent_problem(port: MemoryPort, domain: str, provenance: Provenance) -> Problem | None:
    """Why a free-text note in ``domain`` may not be stored with ``provenance``, if it may not:
    a domain of special-category data needs the user's consent for any note."""
    why = port.note_consent(domain)
    if why is None or provenance.consent_granted:
        return None
    return Problem(
        code="policy.consent_missing", path="$.provenance.consent_granted", stage="guards",
        message=f"a note in domain {domain} needs the user's consent: {why}, and a note may "
        "say anything they hold; ask the user, then send provenance.consent_granted = true "
        "with the consent_version",
    )  # fmt: skip


def _save_fact(
    port: MemoryPort,
    config: LifecycleConfig,
    user_id: str,
    domain: str,
    note: str,
    scope: Scope,
    key: str,
    value: Any,
    session_id: str | None,
    provenance: Provenance,
) -> NoteResult:
    schema = port.key_schema(domain, key)
    if value is None and schema is not None:
        value = infer_value(note, schema)
    if value is None and schema is not None:
        return _refused(
            [
                Problem(
                    code="note.value_missing",
                    path="$.value",
                    message=f"say which value of {key} the note means: call again with value "
                    f"set (schema: {json.dumps(schema.get('enum') or schema.get('type'))})",
                    stage="guards",
                )
            ]
        )
    try:
        observation = Observation(
            user_id=user_id,
            domain=domain,
            key=key,
            value=value,
            source=Source.DIALOGUE,
            confidence=config.note_confidence,
            scope=scope,
            session_id=session_id if scope is not Scope.GLOBAL else None,
            provenance=provenance,
        )
        stored = port.ingest(observation)
    except ValidationError as exc:
        return _refused([_invalid(exc)])
    except ValidationFailed as exc:
        return _refused(list(exc.report.problems))
    return NoteResult(saved=True, stored_as="fact", id=stored.fact_id)


def _save_note(
    port: MemoryPort,
    config: LifecycleConfig,
    user_id: str,
    domain: str,
    text: str,
    scope: Scope,
    session_id: str | None,
    provenance: Provenance,
) -> NoteResult:
    if scope is not Scope.GLOBAL and session_id is None:
        message = f"a {scope.value}-scope note needs the session it belongs to (session_id)"
        problem = Problem(
            code="note.session_missing", path="$.session_id", message=message, stage="envelope"
        )
        return _refused([problem])
    now = port.clock.now()
    try:
        note = Note(
            id=port.clock.new_id("note"),
            user_id=user_id,
            domain=domain,
            text=text,
            scope=scope,
            session_id=session_id,
            confidence=config.note_confidence,
            observed_at=now,
            recorded_at=now,
            provenance=provenance,
            valid_until=now + config.turn_note_ttl if scope is Scope.TURN else None,
        )
    except ValidationError as exc:
        return _refused([_invalid(exc)])
    event = note_event(port.clock, EventType.NOTE_SAVED, note, {"note": note_payload(note)})
    port.append_notes(user_id, [event])
    return NoteResult(saved=True, stored_as="note", id=note.id)
